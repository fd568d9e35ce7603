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
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createServer, type BrokerServer } from '../../broker/app.js';
import { InMemoryGateway } from '../../broker/approval/gateway.js';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import { AuditLog, nodeAuditFs, type AuditFs } from '../../broker/audit/index.js';
import { configSecrets, type BrokerConfig } from '../../broker/config.js';
import type { InstanceConfig } from '../../broker/config/types.js';
import { GrantStore } from '../../broker/grants/index.js';
import { memoryLogger } from '../../broker/log.js';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { createScrubber } from '../../broker/scrub.js';
import type { Envelope } from '../../broker/surfaces/envelope.js';
import { startFakeNextcloud, type FakeNextcloud } from '../fakes/nextcloud.js';

export const AGENT_TOKEN = 'agent-token-0123456789abcdef-0123456789abcdef';
export const TRANSFER_TOKEN = 'transfer-token-0123456789abcdef-0123456789abcd';
export const APP_PASSWORD = 'PlantedSecret-AppPassword-7d1c2b9e';
export const H = 3_600_000;

/**
 * node fs, except that audit writes fail with ENOSPC while `failing` is set, and each
 * write is first shown to `hook` (tests act "between the audit line and the call").
 */
export function faultyFs(): {
  fs: AuditFs;
  fail(on: boolean): void;
  hook(fn: ((text: string) => void) | undefined): void;
} {
  let failing = false;
  let onWrite: ((text: string) => void) | undefined;
  const fs: AuditFs = {
    ...nodeAuditFs,
    async open(path, flags, mode) {
      const handle = await nodeAuditFs.open(path, flags, mode);
      return {
        read: (b, o, l, p) => handle.read(b, o, l, p),
        stat: () => handle.stat(),
        close: () => handle.close(),
        sync: () => handle.sync(),
        write: (data) => {
          onWrite?.(Buffer.from(data).toString('utf8'));
          return failing
            ? Promise.reject(
                Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }),
              )
            : handle.write(data);
        },
      };
    },
  };
  return { fs, fail: (on) => (failing = on), hook: (fn) => (onWrite = fn) };
}

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

export async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'broker-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its envelope, checking text and structuredContent agree. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Envelope> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  const first = content[0];
  if (first === undefined || first.type !== 'text') throw new Error('no text content');
  const fromText = JSON.parse(first.text) as Envelope;
  const structured = result.structuredContent as Envelope;
  if (JSON.stringify(fromText) !== JSON.stringify(structured)) {
    throw new Error(`text and structuredContent differ: ${first.text}`);
  }
  return structured;
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
  const faulty = faultyFs();
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
    failAudit: faulty.fail,
    onAuditWrite: faulty.hook,
    auditLines: () =>
      readFileSync(join(dir, 'audit.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    agent: async () => {
      const c = await connect(`${url}/mcp`, AGENT_TOKEN);
      opened.push(c);
      return c;
    },
    transfer: async () => {
      const c = await connect(`${url}/transfer`, TRANSFER_TOKEN);
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

/** Plain HTTP helper for attacks the MCP client would never send. */
export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
  return { status: res.status, text: await res.text() };
}

export const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'attack', version: '1' },
  },
});

/** A raw HTTP/1.1 request (any Host header, any method), for the HTTP-layer attacks. */
export async function raw(
  url: string,
  opts: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    setHost?: boolean;
  },
): Promise<{
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}> {
  const { request } = await import('node:http');
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers: opts.headers ?? {},
        setHost: opts.setHost ?? true,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Sends bytes as they are (malformed requests Node's client would never write); returns the reply. */
export async function rawExchange(
  url: string,
  text: string,
): Promise<{ status: number; reply: string }> {
  const { connect: netConnect } = await import('node:net');
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    // Write without half-closing: the server ends the exchange (Connection: close, HTTP/1.0).
    const socket = netConnect(Number(target.port), target.hostname, () => socket.write(text));
    socket.setTimeout(5_000, () => socket.destroy());
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const reply = Buffer.concat(chunks).toString('latin1');
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(reply)?.[1] ?? 0), reply });
    });
  });
}
