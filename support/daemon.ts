/**
 * The whole broker on 127.0.0.1:0 in this process, assembled by broker/assemble.ts as
 * the daemon is: two instances (`personal`, and `shared` with discovery) on the fake
 * Nextcloud on loopback (or, with startBrokerOn, on any Nextcloud account), the grants in
 * memory (or, with `persist`, in the temp dir, so `restart()` keeps them), the audit log
 * in that temp dir on a file system the test can make fail, and a clock (and, if given,
 * timers) the test can move. `startBroker` puts the InMemoryGateway in front of the
 * ApprovalEngine (tests approve by typing as the owner); `startMatrixBroker` the
 * MatrixGateway against the fake homeserver.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { BrokerServer } from '../broker/app.js';
import { InMemoryGateway } from '../broker/approval/gateway.js';
import type { ApprovalEngine } from '../broker/approval/engine.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
  type MatrixGatewayOptions,
} from '../broker/approval/matrix/gateway.js';
import { assemble, type AssembleOptions } from '../broker/assemble.js';
import type { AnchorTimers } from '../broker/audit/anchor.js';
import type { AuditFs, AuditLog } from '../broker/audit/index.js';
import type { Kind } from '../broker/base/kinds.js';
import type { LogLevel, Logger } from '../broker/base/log.js';
import type { BrokerConfig, InstanceConfig, MatrixConfig } from '../broker/config.js';
import type { GrantStore } from '../broker/grants/index.js';
import type { RefusalBudgetOptions } from '../broker/operations/refusal-budget.js';
import type { Timers } from '../broker/operations/timers.js';
import type { Reconciler } from '../broker/operations/reconcile/reconciler.js';
import { startFakeHomeserver, type FakeHomeserver } from '../fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../fakes/nextcloud.js';
import { faultyAuditFs } from './audit-fs.js';
import { call, connectMcp } from './mcp.js';
import { AGENT_TOKEN, APP_PASSWORD, METRICS_TOKEN, TRANSFER_TOKEN } from './tokens.js';

export const H = 3_600_000;
export const BOT = '@broker-bot:hs.test';
export const OWNER = '@owner:hs.test';
export const ROOM = '!approvals:hs.test';
const MATRIX_TOKENS = {
  [BOT]: 'bench-bot-access-token-0123456789abcdef',
  [OWNER]: 'bench-owner-access-token-0123456789abcd',
};

export interface BrokerOptions {
  /** The `shared` instance's discovery policy. Default true. */
  discovery?: boolean;
  /** The fake Nextcloud's clock (its trash bin names items by its seconds). Default: Date.now. */
  nextcloudNow?: () => number;
  /** What both instances declare of the server's retention (config/retention.ts). */
  retention?: InstanceConfig['retention'];
  /** How often the lifecycle sweep runs. Default 60 s (tests call `server.sweep()`). */
  sweepIntervalMs?: number;
  maxBodyBytes?: number;
  /** server.request_timeout_ms. Default 5 s. */
  requestTimeoutMs?: number;
  /** Default debug. */
  logLevel?: LogLevel;
  /** The Nextcloud clients' timeout (default 5 s) and capabilities cache (default none). */
  nextcloud?: { timeoutMs?: number; capabilitiesTtlMs?: number };
  /** `transfer.chunk_size`: uploads above it and every replacement are chunked. */
  chunkSize?: number;
  /** `transfer.put_limit`: new files above it are chunked (default: one PUT at any size). */
  putLimit?: number;
  /** The audit log's file system; without it, one that `failAudit` and `onAuditWrite` act on. */
  auditFs?: AuditFs;
  /** Keep the grant database in the data dir (not in memory), so `restart()` keeps it. */
  persist?: boolean;
  /** The daemon's timers (the sweep's interval, each operation's expiry timer). */
  timers?: Timers;
  /** lifecycle.max_pending. Default 10. */
  maxPending?: number;
  /** audit.anchor_interval (default 1 h) and the anchor's timers (default node's). */
  anchorIntervalMs?: number;
  anchorTimers?: AnchorTimers;
  /** Refused calls each surface may make (default the daemon's own). */
  refusalBudget?: RefusalBudgetOptions;
  /** Set tokens.metrics to METRICS_TOKEN (GET /metrics on). Default off. */
  metrics?: boolean;
  /** reconcile.interval (ms). Default off: tests run passes through `reconciler`. */
  reconcileIntervalMs?: number;
}

/**
 * The timings the fault runs and the approval benchmark use: the sweep on its 5 s
 * production interval, capabilities cached as in production, info logging.
 */
export const FAULT_RUN: BrokerOptions = {
  requestTimeoutMs: 10_000,
  logLevel: 'info',
  sweepIntervalMs: 5_000,
  nextcloud: { timeoutMs: 10_000, capabilitiesTtlMs: 60_000 },
};

/** Where the broker's two instances point: one Nextcloud account. */
export interface NextcloudTarget {
  url: string;
  user: string;
  password: string;
}

/** One request_access item (kind absent: files). */
export interface RequestedItem {
  kind?: Kind;
  path: string;
  mode: 'read' | 'write';
}

interface Common {
  url: string;
  server: BrokerServer;
  store: GrantStore;
  audit: AuditLog;
  engine: ApprovalEngine;
  config: BrokerConfig;
  logger: Logger & { lines: string[] };
  dir: string;
  clock: { offset: number };
  failAudit(on: boolean): void;
  /** Runs `fn` with the text of every audit write, just before it is written. */
  onAuditWrite(fn: ((text: string) => void) | undefined): void;
  /** Audit records written so far. */
  auditLines(): Record<string, unknown>[];
  /** The daemon's reconciliation (reconcile.interval is off unless set: tests run passes). */
  reconciler: Reconciler;
  agent(): Promise<Client>;
  transfer(): Promise<Client>;
  /** request_access from `agent`; returns the request number (throws unless pending). */
  request(agent: Client, items: RequestedItem[], instance?: string): Promise<number>;
  /** Stops the daemon (the daemon's own teardown), the fakes, and removes the temp dir. */
  close(): Promise<void>;
}

/** A broker that can be stopped and started again on the same data dir and Nextcloud. */
export interface Restartable<B> {
  /**
   * Stops this daemon as `close()` would, but keeps the data dir and the fakes, and
   * starts a new daemon on them (same config and clock; a new port). The new broker owns
   * everything from then on; closing this one afterwards does nothing.
   */
  restart(): Promise<B>;
}

/** The broker with the InMemoryGateway: tests speak as the owner. */
interface OwnerBroker extends Common {
  gateway: InMemoryGateway;
  /** request_access + approve as the owner; returns the request number. */
  grant(items: RequestedItem[], instance?: string): Promise<number>;
}

/** The broker on any Nextcloud (startBrokerOn). */
export interface BrokerOn extends OwnerBroker, Restartable<BrokerOn> {}

/** The broker on the fake Nextcloud (startBroker). */
export interface Broker extends OwnerBroker, Restartable<Broker> {
  fake: FakeNextcloud;
}

export interface MatrixBroker extends Common {
  fake: FakeNextcloud;
  hs: FakeHomeserver;
  gateway: MatrixGateway;
  /** Resolves when the gateway has handled the event (from its onHandled hook). */
  handled(eventId: string, timeoutMs?: number): Promise<HandledEvent>;
  /** The bot's message for request `id`, once posted. */
  requestMessage(id: number): string | undefined;
  /** request_access for `path` (read), then the owner's 👍; resolves once handled. */
  approveByReaction(path: string): Promise<number>;
}

/** The broker on the fake Nextcloud. */
export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  const fake = await startFakeNextcloud({
    password: APP_PASSWORD,
    ...(opts.nextcloudNow === undefined ? {} : { now: opts.nextcloudNow }),
  });
  try {
    const broker = await startBrokerOn(fakeTarget(fake), opts, () => fake.close());
    return withFake(broker, fake);
  } catch (error) {
    await fake.close();
    throw error;
  }
}

function withFake(broker: BrokerOn, fake: FakeNextcloud): Broker {
  const restart = broker.restart;
  return Object.assign(broker, {
    fake,
    restart: async () => withFake(await restart(), fake),
  });
}

/** The broker on any Nextcloud (the real-server suite passes a real one). */
export function startBrokerOn(
  nextcloud: NextcloudTarget,
  opts: BrokerOptions = {},
  onClose: () => Promise<void> = () => Promise.resolve(),
  kept?: Kept,
): Promise<BrokerOn> {
  let gateway: InMemoryGateway | undefined;
  return start(
    nextcloud,
    onClose,
    opts,
    undefined,
    (engine) => (gateway = new InMemoryGateway({ engine, actor: OWNER })),
    (common, keep) => {
      const inMemory = gateway as InMemoryGateway;
      return {
        ...common,
        gateway: inMemory,
        grant: async (items, instance = 'personal') => {
          const id = await common.request(await common.agent(), items, instance);
          await inMemory.decide(`approve ${id}`);
          return id;
        },
        restart: async () => startBrokerOn(nextcloud, opts, onClose, await keep()),
      };
    },
    kept,
  );
}

/** What a restart keeps: the data dir and the clock. */
interface Kept {
  dir: string;
  clock: { offset: number };
}

const fakeTarget = (fake: FakeNextcloud): NextcloudTarget => ({
  url: fake.url,
  user: fake.user,
  password: APP_PASSWORD,
});

export async function startMatrixBroker(
  opts: BrokerOptions & { gatewayOptions?: MatrixGatewayOptions } = {},
): Promise<MatrixBroker> {
  const fake = await startFakeNextcloud({ password: APP_PASSWORD });
  const hs = await startFakeHomeserver({ users: MATRIX_TOKENS });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT] });
  const matrix: MatrixConfig = {
    homeserver: hs.url,
    bot_user: BOT,
    bot_token: MATRIX_TOKENS[BOT],
    room_id: ROOM,
    approver: OWNER,
  };
  const waiters = new Map<string, (e: HandledEvent) => void>();
  const seen = new Map<string, HandledEvent>();
  let gateway: MatrixGateway | undefined;
  try {
    return await start(
      fakeTarget(fake),
      () => fake.close(),
      opts,
      matrix,
      (engine, parts) =>
        (gateway = new MatrixGateway({
          config: parts.config,
          engine,
          logger: parts.logger,
          now: parts.now,
          audit: parts.audit,
          ...(opts.gatewayOptions ? { options: opts.gatewayOptions } : {}),
          onHandled: (e) => {
            seen.set(e.eventId, e);
            waiters.get(e.eventId)?.(e);
          },
        })),
      (common) => {
        const rig: MatrixBroker = {
          ...common,
          fake,
          hs,
          gateway: gateway as MatrixGateway,
          handled: (eventId, timeoutMs = 10_000) => {
            const done = seen.get(eventId);
            if (done) return Promise.resolve(done);
            return new Promise((resolve, reject) => {
              const timer = setTimeout(() => {
                waiters.delete(eventId);
                reject(new Error(`event ${eventId} not handled within ${timeoutMs} ms`));
              }, timeoutMs);
              waiters.set(eventId, (e) => {
                clearTimeout(timer);
                waiters.delete(eventId);
                resolve(e);
              });
            });
          },
          requestMessage: (id) =>
            hs.timeline(ROOM).find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id)
              ?.event_id,
          close: async () => {
            await common.close();
            await hs.close();
          },
          approveByReaction: async (path) => {
            const id = await common.request(await common.agent(), [{ path, mode: 'read' }]);
            const message = rig.requestMessage(id);
            if (message === undefined) throw new Error(`request ${id} not posted`);
            await rig.handled(hs.reactAs(OWNER, ROOM, message, '👍'));
            return id;
          },
        };
        return rig;
      },
    );
  } catch (error) {
    await hs.close();
    await fake.close();
    throw error;
  }
}

async function start<B>(
  nextcloud: NextcloudTarget,
  onClose: () => Promise<void>,
  opts: BrokerOptions,
  matrix: MatrixConfig | undefined,
  gateway: NonNullable<AssembleOptions['gateway']>,
  finish: (common: Common, keep: () => Promise<Kept>) => B,
  kept?: Kept,
): Promise<B> {
  const dir = kept?.dir ?? mkdtempSync(join(tmpdir(), 'broker-daemon-'));
  const clock = kept?.clock ?? { offset: 0 };
  const now = (): number => Date.now() + clock.offset;
  const instance = (name: string, discovery: boolean): InstanceConfig => ({
    name,
    url: nextcloud.url,
    username: nextcloud.user,
    app_password: nextcloud.password,
    discovery,
    ...(opts.retention === undefined ? {} : { retention: opts.retention }),
  });
  const config: BrokerConfig = {
    server: {
      host: '127.0.0.1',
      port: 0,
      allowed_hosts: ['localhost', '127.0.0.1', '[::1]'],
      max_body_bytes: opts.maxBodyBytes ?? 64 * 1024,
      request_timeout_ms: opts.requestTimeoutMs ?? 5_000,
    },
    tokens: {
      agent: AGENT_TOKEN,
      transfer: TRANSFER_TOKEN,
      ...(opts.metrics === true ? { metrics: METRICS_TOKEN } : {}),
    },
    matrix,
    approval: matrix === undefined ? 'console' : 'matrix',
    lifecycle: {
      pending_timeout: 12 * H,
      default_grant: 24 * H,
      max_grant: 7 * 24 * H,
      max_pending: opts.maxPending ?? 10,
    },
    audit: { anchor_interval: opts.anchorIntervalMs ?? H },
    reconcile: { interval: opts.reconcileIntervalMs ?? 'off' },
    transfer: {
      chunk_size: opts.chunkSize ?? 16 * 2 ** 20,
      ...(opts.putLimit === undefined ? {} : { put_limit: opts.putLimit }),
    },
    data_dir: dir,
    logging: { level: opts.logLevel ?? 'debug' },
    instances: new Map([
      ['personal', instance('personal', false)],
      ['shared', instance('shared', opts.discovery ?? true)],
    ]),
  };
  const lines: string[] = [];
  const faulty = faultyAuditFs();
  const daemon = await assemble(config, {
    writeLog: (line) => lines.push(line),
    now,
    grantsFile: opts.persist === true ? join(dir, 'grants.db') : ':memory:',
    auditFs: opts.auditFs ?? faulty.fs,
    ...(opts.timers === undefined ? {} : { timers: opts.timers }),
    nextcloud: { timeoutMs: 5_000, capabilitiesTtlMs: 0, ...opts.nextcloud },
    gateway,
    sweepIntervalMs: opts.sweepIntervalMs ?? 60_000,
    drainTimeoutMs: 1_000,
    ...(opts.anchorTimers === undefined ? {} : { anchorTimers: opts.anchorTimers }),
    ...(opts.refusalBudget === undefined ? {} : { refusalBudget: opts.refusalBudget }),
  });
  let url: string;
  try {
    ({ url } = await daemon.start());
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const opened: Client[] = [];
  let handedOver = false;
  const stopDaemon = async (): Promise<void> => {
    for (const c of opened) await c.close().catch(() => undefined);
    await daemon.stop();
  };
  const open = async (path: string, token: string): Promise<Client> => {
    const c = await connectMcp(`${url}${path}`, token);
    opened.push(c);
    return c;
  };
  const common: Common = {
    url,
    server: daemon.server,
    store: daemon.store,
    audit: daemon.audit,
    engine: daemon.engine,
    config,
    logger: Object.assign(daemon.logger, { lines }),
    dir,
    clock,
    reconciler: daemon.reconciler,
    failAudit: faulty.failWrites,
    onAuditWrite: faulty.onWrite,
    auditLines: () =>
      readFileSync(join(dir, 'audit.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    agent: () => open('/mcp', AGENT_TOKEN),
    transfer: () => open('/transfer', TRANSFER_TOKEN),
    request: async (agent, items, inst = 'personal') => {
      const answer = await call(agent, 'request_access', {
        instance: inst,
        reason: 'test work',
        items,
      });
      if (answer.status !== 'pending')
        throw new Error(`request not pending: ${JSON.stringify(answer)}`);
      return answer.request as number;
    },
    close: async () => {
      if (handedOver) return;
      await stopDaemon();
      await onClose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return finish(common, async () => {
    if (opts.persist !== true) throw new Error('restart() needs a broker started with persist');
    handedOver = true;
    await stopDaemon();
    return { dir, clock };
  });
}
