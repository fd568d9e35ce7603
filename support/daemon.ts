/**
 * The whole broker on 127.0.0.1:0, built from real parts: the fake Nextcloud (or, with
 * startBrokerOn, any Nextcloud account), a real NextcloudClient per instance, a
 * GrantStore (SQLite in memory), an AuditLog in a temp dir (its file system can be told
 * to fail), the ApprovalEngine behind an InMemoryGateway (tests approve by typing as the
 * owner), and MCP clients speaking Streamable HTTP with a bearer header.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createServer, type BrokerServer } from '../broker/app.js';
import { InMemoryGateway } from '../broker/approval/gateway.js';
import { ApprovalEngine } from '../broker/approval/engine.js';
import { AuditLog } from '../broker/audit/index.js';
import { configSecrets, type BrokerConfig } from '../broker/config.js';
import type { InstanceConfig } from '../broker/config/types.js';
import { GrantStore } from '../broker/grants/index.js';
import { memoryLogger } from '../broker/base/log.js';
import { NextcloudClient } from '../broker/nextcloud/index.js';
import { createScrubber } from '../broker/base/scrub.js';
import { startFakeNextcloud, type FakeNextcloud } from '../fakes/nextcloud.js';
import { faultyAuditFs } from './audit-fs.js';
import { call, connectMcp } from './mcp.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from './tokens.js';

export const H = 3_600_000;

export interface Broker {
  url: string;
  fake: FakeNextcloud;
  server: BrokerServer;
  store: GrantStore;
  audit: AuditLog;
  engine: ApprovalEngine;
  gateway: InMemoryGateway;
  config: BrokerConfig;
  logger: ReturnType<typeof memoryLogger>;
  dir: string;
  clock: { offset: number };
  failAudit(on: boolean): void;
  /** Runs `fn` with the text of every audit write, just before it is written. */
  onAuditWrite(fn: ((text: string) => void) | undefined): void;
  /** Audit records written so far. */
  auditLines(): Record<string, unknown>[];
  agent(): Promise<Client>;
  transfer(): Promise<Client>;
  /** request_access + approve as the owner; returns the request number. */
  grant(items: { path: string; mode: 'read' | 'write' }[], instance?: string): Promise<number>;
  close(): Promise<void>;
}

export interface BrokerOptions {
  discovery?: boolean;
  sweepIntervalMs?: number;
  maxBodyBytes?: number;
  requestTimeoutMs?: number;
}

/** Where the broker's two instances point: one Nextcloud account. */
export interface NextcloudTarget {
  url: string;
  user: string;
  password: string;
}

/** The broker on the fake Nextcloud. */
export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  const fake = await startFakeNextcloud({ password: APP_PASSWORD });
  const broker = await startBrokerOn(
    { url: fake.url, user: fake.user, password: APP_PASSWORD },
    opts,
    () => fake.close(),
  );
  return Object.assign(broker, { fake });
}

/** The broker on any Nextcloud (the real-server suite passes a real one). */
export async function startBrokerOn(
  nextcloud: NextcloudTarget,
  opts: BrokerOptions = {},
  onClose: () => Promise<void> = () => Promise.resolve(),
): Promise<Omit<Broker, 'fake'>> {
  const dir = mkdtempSync(join(tmpdir(), 'broker-daemon-'));
  const clock = { offset: 0 };
  const now = (): number => Date.now() + clock.offset;
  const instance = (name: string, discovery: boolean): InstanceConfig => ({
    name,
    url: nextcloud.url,
    username: nextcloud.user,
    app_password: nextcloud.password,
    discovery,
  });
  const config: BrokerConfig = {
    server: {
      host: '127.0.0.1',
      port: 0,
      allowed_hosts: ['localhost', '127.0.0.1', '[::1]'],
      max_body_bytes: opts.maxBodyBytes ?? 64 * 1024,
      request_timeout_ms: opts.requestTimeoutMs ?? 5_000,
    },
    tokens: { agent: AGENT_TOKEN, transfer: TRANSFER_TOKEN },
    matrix: undefined,
    approval: 'console',
    lifecycle: { pending_timeout: 12 * H, default_grant: 24 * H, max_grant: 7 * 24 * H },
    data_dir: dir,
    logging: { level: 'debug' },
    instances: new Map([
      ['personal', instance('personal', false)],
      ['shared', instance('shared', opts.discovery ?? true)],
    ]),
  };
  const scrub = createScrubber(configSecrets(config), [[nextcloud.user, nextcloud.password]]);
  const logger = memoryLogger(scrub);
  const faulty = faultyAuditFs();
  const audit = await AuditLog.open(dir, { now, fs: faulty.fs });
  const store = GrantStore.open(':memory:', {
    now,
    pendingTimeoutMs: config.lifecycle.pending_timeout,
  });
  const clients = new Map(
    [...config.instances].map(([name, inst]) => [
      name,
      new NextcloudClient(inst, { now, logger, timeoutMs: 5_000, capabilitiesTtlMs: 0 }),
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
  const gateway = new InMemoryGateway({ engine, actor: '@owner:test' });
  const server = createServer({
    config,
    grants: store,
    audit,
    gateway,
    clients,
    logger,
    scrub,
    now,
    sweepIntervalMs: opts.sweepIntervalMs ?? 60_000,
    drainTimeoutMs: 1_000,
  });
  hook.server = server;
  const { url } = await server.start();
  const opened: Client[] = [];
  const started = server;
  const broker: Omit<Broker, 'fake'> = {
    url,
    server: started,
    store,
    audit,
    engine,
    gateway,
    config,
    logger,
    dir,
    clock,
    failAudit: faulty.failWrites,
    onAuditWrite: faulty.onWrite,
    auditLines: () =>
      readFileSync(join(dir, 'audit.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    agent: async () => {
      const c = await connectMcp(`${url}/mcp`, AGENT_TOKEN);
      opened.push(c);
      return c;
    },
    transfer: async () => {
      const c = await connectMcp(`${url}/transfer`, TRANSFER_TOKEN);
      opened.push(c);
      return c;
    },
    grant: async (items, inst = 'personal') => {
      const agent = await broker.agent();
      const answer = await call(agent, 'request_access', {
        instance: inst,
        reason: 'test work',
        items,
      });
      if (answer.status !== 'pending')
        throw new Error(`request not pending: ${JSON.stringify(answer)}`);
      const id = answer.request as number;
      await gateway.decide(`approve ${id}`);
      return id;
    },
    close: async () => {
      for (const c of opened) await c.close().catch(() => undefined);
      await started.close();
      for (const c of clients.values()) c.close();
      await audit.close().catch(() => undefined);
      store.close();
      await onClose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return broker;
}
