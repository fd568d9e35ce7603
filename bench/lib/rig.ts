/**
 * The whole broker in this process with Matrix approval, built from the real parts as
 * broker/main.ts wires them — createServer, GrantStore (SQLite file), AuditLog (temp
 * dir), ApprovalEngine, MatrixGateway — against the fake homeserver and the fake
 * Nextcloud on loopback. Used by bench/approval.bench.ts and the homeserver fault test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createServer, type BrokerServer } from '../../broker/app.js';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
  type MatrixGatewayOptions,
} from '../../broker/approval/matrix/gateway.js';
import { AuditLog } from '../../broker/audit/index.js';
import { configSecrets, type BrokerConfig } from '../../broker/config.js';
import { GrantStore } from '../../broker/grants/index.js';
import { memoryLogger } from '../../broker/log.js';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { createScrubber } from '../../broker/scrub.js';
import { startFakeHomeserver, type FakeHomeserver } from '../../test/fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../test/fakes/nextcloud.js';
import { callTool, connectMcp, type Envelope } from './mcp.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from './processes.js';

export const BOT = '@broker-bot:hs.test';
export const OWNER = '@owner:hs.test';
export const ROOM = '!approvals:hs.test';
const USERS = {
  [BOT]: 'bench-bot-access-token-0123456789abcdef',
  [OWNER]: 'bench-owner-access-token-0123456789abcd',
};
const H = 3_600_000;

export interface MatrixBroker {
  url: string;
  hs: FakeHomeserver;
  fake: FakeNextcloud;
  store: GrantStore;
  gateway: MatrixGateway;
  logger: ReturnType<typeof memoryLogger>;
  dir: string;
  /** Resolves when the gateway has handled the event (from its onHandled hook). */
  handled(eventId: string, timeoutMs?: number): Promise<HandledEvent>;
  /** The bot's message for request `id`, once posted. */
  requestMessage(id: number): string | undefined;
  agent(): Promise<Client>;
  /** request_access from `agent`; returns the request number (throws unless pending). */
  request(agent: Client, items: { path: string; mode: 'read' | 'write' }[]): Promise<number>;
  close(): Promise<void>;
}

export async function startMatrixBroker(
  opts: { gatewayOptions?: MatrixGatewayOptions } = {},
): Promise<MatrixBroker> {
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
    approval: 'matrix',
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
  const audit = await AuditLog.open(dir, { now });
  const store = GrantStore.open(join(dir, 'grants.db'), {
    now,
    pendingTimeoutMs: config.lifecycle.pending_timeout,
  });
  const clients = new Map(
    [...config.instances].map(([name, inst]) => [
      name,
      new NextcloudClient(inst, { now, logger, timeoutMs: 10_000 }),
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
  const gateway = new MatrixGateway({
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
  return {
    url,
    hs,
    fake,
    store,
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
}
