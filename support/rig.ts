/**
 * The whole broker in this process, built from the real parts as broker/main.ts wires
 * them — createServer, GrantStore (SQLite file), AuditLog (temp dir), ApprovalEngine and
 * either the MatrixGateway against the fake homeserver or the InMemoryGateway — with
 * the fake Nextcloud on loopback. Unlike support/daemon.ts it lets a caller choose
 * the Nextcloud client's timeout and the audit log's file system (to make it fail).
 * Used by bench/approval.bench.ts and the fault tests in test/faults/.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createServer, type BrokerServer } from '../broker/app.js';
import { ApprovalEngine } from '../broker/approval/engine.js';
import { InMemoryGateway } from '../broker/approval/gateway.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
  type MatrixGatewayOptions,
} from '../broker/approval/matrix/gateway.js';
import { AuditLog, type AuditFs } from '../broker/audit/index.js';
import { configSecrets, type BrokerConfig } from '../broker/config.js';
import { GrantStore } from '../broker/grants/index.js';
import { memoryLogger } from '../broker/base/log.js';
import { NextcloudClient } from '../broker/nextcloud/index.js';
import { createScrubber } from '../broker/base/scrub.js';
import { startFakeHomeserver, type FakeHomeserver } from '../fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../fakes/nextcloud.js';
import { callTool, connectMcp, type Envelope } from './mcp.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from './tokens.js';

export const BOT = '@broker-bot:hs.test';
export const OWNER = '@owner:hs.test';
export const ROOM = '!approvals:hs.test';
const USERS = {
  [BOT]: 'bench-bot-access-token-0123456789abcdef',
  [OWNER]: 'bench-owner-access-token-0123456789abcd',
};
const H = 3_600_000;

export interface RigOptions {
  /** 'matrix' (default): MatrixGateway + fake homeserver; 'memory': InMemoryGateway. */
  approval?: 'matrix' | 'memory';
  gatewayOptions?: MatrixGatewayOptions;
  /** The Nextcloud client's timeout (default 10 s). */
  nextcloudTimeoutMs?: number;
  /** The audit log's file system (default: node's). */
  auditFs?: AuditFs;
}

export interface Rig {
  url: string;
  /** Present with approval 'matrix'. */
  hs: FakeHomeserver;
  fake: FakeNextcloud;
  store: GrantStore;
  audit: AuditLog;
  server: BrokerServer;
  /** The MatrixGateway, or the InMemoryGateway with approval 'memory'. */
  gateway: MatrixGateway | InMemoryGateway;
  logger: ReturnType<typeof memoryLogger>;
  dir: string;
  /** Resolves when the gateway has handled the event (from its onHandled hook). */
  handled(eventId: string, timeoutMs?: number): Promise<HandledEvent>;
  /** The bot's message for request `id`, once posted. */
  requestMessage(id: number): string | undefined;
  agent(): Promise<Client>;
  transfer(): Promise<Client>;
  /** The audit records written so far, read back from the file. */
  auditLines(): Record<string, unknown>[];
  /** request_access from `agent`; returns the request number (throws unless pending). */
  request(agent: Client, items: { path: string; mode: 'read' | 'write' }[]): Promise<number>;
  /** With approval 'memory': request and approve as the owner; returns the request number. */
  grant(items: { path: string; mode: 'read' | 'write' }[]): Promise<number>;
  close(): Promise<void>;
}

export async function startRig(opts: RigOptions = {}): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'broker-matrix-'));
  const fake = await startFakeNextcloud({ password: APP_PASSWORD });
  const hs = await startFakeHomeserver({ users: USERS });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT] });
  const now = Date.now;
  const config: BrokerConfig = {
    server: {
      host: '127.0.0.1',
      port: 0,
      allowed_hosts: ['localhost', '127.0.0.1'],
      max_body_bytes: 64 * 1024,
      request_timeout_ms: 10_000,
    },
    tokens: { agent: AGENT_TOKEN, transfer: TRANSFER_TOKEN },
    matrix: {
      homeserver: hs.url,
      bot_user: BOT,
      bot_token: USERS[BOT],
      room_id: ROOM,
      approver: OWNER,
    },
    approval: opts.approval === 'memory' ? 'console' : 'matrix',
    lifecycle: { pending_timeout: 12 * H, default_grant: 24 * H, max_grant: 7 * 24 * H },
    data_dir: dir,
    logging: { level: 'info' },
    instances: new Map([
      [
        'personal',
        {
          name: 'personal',
          url: fake.url,
          username: fake.user,
          app_password: APP_PASSWORD,
          discovery: false,
        },
      ],
    ]),
  };
  const scrub = createScrubber(configSecrets(config), [[fake.user, APP_PASSWORD]]);
  const logger = memoryLogger(scrub);
  const audit = await AuditLog.open(dir, { now, ...(opts.auditFs ? { fs: opts.auditFs } : {}) });
  const store = GrantStore.open(join(dir, 'grants.db'), {
    now,
    pendingTimeoutMs: config.lifecycle.pending_timeout,
  });
  const clients = new Map(
    [...config.instances].map(([name, inst]) => [
      name,
      new NextcloudClient(inst, { now, logger, timeoutMs: opts.nextcloudTimeoutMs ?? 10_000 }),
    ]),
  );
  const hook: { server?: BrokerServer } = {};
  const engine = new ApprovalEngine({
    config,
    store,
    audit,
    now,
    logger,
    onRevoked: (grants) => hook.server?.grantsEnded(grants) ?? Promise.resolve(),
  });
  const waiters = new Map<string, (e: HandledEvent) => void>();
  const seen = new Map<string, HandledEvent>();
  const gateway =
    opts.approval === 'memory'
      ? new InMemoryGateway({ engine, actor: OWNER })
      : new MatrixGateway({
          config,
          engine,
          logger,
          now,
          audit,
          ...(opts.gatewayOptions ? { options: opts.gatewayOptions } : {}),
          onHandled: (e) => {
            seen.set(e.eventId, e);
            waiters.get(e.eventId)?.(e);
          },
        });
  const server = createServer({
    config,
    grants: store,
    audit,
    gateway,
    clients,
    logger,
    scrub,
    now,
    drainTimeoutMs: 1_000,
  });
  hook.server = server;
  const { url } = await server.start();
  const opened: Client[] = [];
  const rig: Rig = {
    url,
    hs,
    fake,
    store,
    audit,
    server,
    gateway,
    logger,
    dir,
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
      hs.timeline(ROOM).find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id)?.event_id,
    agent: async () => {
      const c = await connectMcp(`${url}/mcp`, AGENT_TOKEN);
      opened.push(c);
      return c;
    },
    auditLines: () =>
      readFileSync(join(dir, 'audit.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    transfer: async () => {
      const c = await connectMcp(`${url}/transfer`, TRANSFER_TOKEN);
      opened.push(c);
      return c;
    },
    request: async (agent, items) => {
      const answer: Envelope = await callTool(agent, 'request_access', {
        instance: 'personal',
        reason: 'benchmark',
        items,
      });
      if (answer.status !== 'pending')
        throw new Error(`request not pending: ${JSON.stringify(answer)}`);
      return answer.request as number;
    },
    grant: async (items) => {
      if (!(gateway instanceof InMemoryGateway)) throw new Error('grant() needs approval: memory');
      const id = await rig.request(await rig.agent(), items);
      await gateway.decide(`approve ${id}`);
      return id;
    },
    close: async () => {
      for (const c of opened) await c.close().catch(() => undefined);
      await server.close();
      for (const c of clients.values()) c.close();
      await audit.close().catch(() => undefined);
      store.close();
      await hs.close();
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return rig;
}
