/**
 * The whole daemon (broker/main.ts startBroker, from a config file) with `approval:
 * matrix` and the homeserver down at boot (docs/architecture.md: approval plane down ⇒
 * request_access answers error; existing grants keep working). The broker starts,
 * serves existing grants, refuses new requests with the documented message, and once
 * the homeserver is back a request is posted and the approver's 👍 approves it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLEAR_TEXT_NOTICE } from '../../broker/approval/views.js';
import { PassThrough } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REQUEST_ID_KEY } from '../../broker/approval/matrix/gateway.js';
import { askOwner } from '../../broker/approval/owner/client.js';
import { GrantStore } from '../../broker/grants/index.js';
import { GRANTS_FILE } from '../../broker/assemble.js';
import { startBroker, type RunningBroker } from '../../broker/main.js';
import { startFakeHomeserver, type FakeHomeserver } from '../../fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { BOT, OWNER, ROOM, TOKENS } from '../../support/matrix.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call, connectMcp, type Envelope } from '../../support/mcp.js';
import { until } from '../../support/until.js';

let hs: FakeHomeserver;
let nc: FakeNextcloud;
let dir: string;
let broker: RunningBroker | undefined;
let agent: Client | undefined;
const log: string[] = [];

beforeEach(async () => {
  hs = await startFakeHomeserver({ users: TOKENS });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT] });
  nc = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'matrix-daemon-'));
  log.length = 0;
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  await broker?.stop();
  broker = undefined;
  await hs.close();
  await nc.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'server: { host: 127.0.0.1, port: 0, allowed_hosts: [localhost, 127.0.0.1] }',
      'tokens: { agent_env: T_AGENT, transfer_env: T_TRANSFER }',
      'approval: matrix',
      'matrix:',
      `  homeserver: "${hs.url}"`,
      `  bot_user: "${BOT}"`,
      '  bot_token_env: T_MATRIX',
      `  room_id: "${ROOM}"`,
      `  approver: "${OWNER}"`,
      'data_dir: ./data',
      'logging: { level: info }',
      'instances:',
      `  personal: { url: "${nc.url}", username: ${nc.user}, app_password_env: T_NC, discovery: false }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

/** A grant made before this start (by an earlier run of the broker). */
function existingGrant(path: string): void {
  mkdirSync(join(dir, 'data'), { mode: 0o700 });
  const store = GrantStore.open(join(dir, 'data', GRANTS_FILE), { now: Date.now });
  try {
    const r = store.createRequest({
      instance: 'personal',
      reason: 'earlier',
      items: [{ path, mode: 'read' }],
    });
    const d = store.decide(r.id, {
      kind: 'approve',
      durationMs: 3_600_000,
      maxMs: 3_600_000,
      by: OWNER,
    });
    if (!d.ok) throw new Error(d.message);
  } finally {
    store.close();
  }
}

async function boot(): Promise<{ url: string; agent: Client }> {
  broker = await startBroker(writeConfig(), {
    env: {
      T_AGENT: AGENT_TOKEN,
      T_TRANSFER: TRANSFER_TOKEN,
      T_MATRIX: TOKENS[BOT],
      T_NC: APP_PASSWORD,
    },
    writeLog: (line) => log.push(line),
    stdin: new PassThrough(),
    stdout: new PassThrough(),
  });
  agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  return { url: broker.url, agent };
}

/** Calls `get` until `done` holds (or `until`'s limit passes), returning the last answer. */
async function eventually(
  get: () => Promise<Envelope>,
  done: (a: Envelope) => boolean,
): Promise<Envelope> {
  let last = await get();
  await until('the expected answer', async () => done((last = await get())), undefined, 200);
  return last;
}

const ask = (client: Client, path: string): Promise<Envelope> =>
  call(client, 'request_access', {
    instance: 'personal',
    reason: 'read the reports',
    items: [{ path, mode: 'read' }],
  });

describe('the homeserver is down when the broker starts (docs/architecture.md)', () => {
  it('starts anyway: health ok, existing grants work, requests answer "unavailable"; once the homeserver is back, a 👍 approves', async () => {
    await nc.mkdir('Earlier');
    await nc.writeFile('Earlier/a.txt', 'old grant still works');
    await nc.mkdir('Reports');
    existingGrant('Earlier');
    await hs.outage(true);

    const { url, agent: client } = await boot();
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });

    const refused = await ask(client, 'Reports');
    expect(refused).toMatchObject({
      status: 'error',
      code: 'approval_unavailable',
      message: 'approval channel unavailable; existing grants still work',
    });
    const listed = await call(client, 'list', { instance: 'personal', path: 'Earlier' });
    expect(listed.status).toBe('ok');
    expect(JSON.stringify(listed)).toContain('a.txt');
    expect(log.some((l) => l.includes('retrying in the background'))).toBe(true);

    await hs.outage(false);
    // The gateway retries about a second after the failed start.
    const answer = await eventually(
      () => ask(client, 'Reports'),
      (a) => a.status === 'pending',
    );
    expect(answer.status).toBe('pending');
    const id = answer['request'] as number;
    const message = hs
      .timeline(ROOM)
      .find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id);
    expect(message).toBeDefined();
    hs.reactAs(OWNER, ROOM, message?.event_id ?? '', '👍');
    const decided = await eventually(
      () => call(client, 'check_access', { request: id }),
      (a) => a['state'] === 'approved',
    );
    const state = decided['state'];
    expect(state).toBe('approved');
    expect((await call(client, 'list', { instance: 'personal', path: 'Reports' })).status).toBe(
      'ok',
    );
    // Security: the bot token never reaches a log line, through the outage either.
    expect(log.join('')).not.toContain(TOKENS[BOT]);
  }, 30_000);
});

describe('the owner socket beside Matrix (docs/contracts.md §6)', () => {
  it('a second shell approves, lists and revokes; the room sees the request, and an anchor after each change', async () => {
    await nc.mkdir('Reports');
    const { agent: client } = await boot();
    const data = join(dir, 'data');
    const pending = await ask(client, 'Reports');
    expect(pending.status).toBe('pending');
    const id = pending['request'] as number;
    await until('the request in the room', () =>
      hs.timeline(ROOM).some((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id),
    );
    const approved = await askOwner(data, { op: 'command', text: `approve ${id} 1h` });
    expect(approved).toMatchObject({ ok: true, granted: [{ request: id, path: 'Reports' }] });
    expect(await call(client, 'check_access', { request: id })).toMatchObject({
      state: 'approved',
    });
    const anchors = (): number =>
      hs.timeline(ROOM).filter((e) => String(e.content['body']).startsWith('audit anchor')).length;
    await until('an anchor after the approval', () => anchors() === 1);
    expect(await askOwner(data, { op: 'grants' })).toMatchObject({
      grants: [{ request: id, path: 'Reports', expires_in_ms: expect.any(Number) }],
    });
    expect(await askOwner(data, { op: 'command', text: 'revoke all' })).toMatchObject({
      ok: true,
      revoked: [{ request: id }],
    });
    await until('an anchor after the revoke', () => anchors() === 2);
    // The room is clear text (matrix.encryption: off): status says what that proves.
    expect(await askOwner(data, { op: 'command', text: 'status' })).toMatchObject({
      text: expect.stringContaining(CLEAR_TEXT_NOTICE),
    });
    expect((await call(client, 'list', { instance: 'personal', path: 'Reports' })).status).not.toBe(
      'ok',
    );
  }, 30_000);
});

describe('a room the bot must not use refuses the start (issue 5)', () => {
  it('an encrypted room: startBroker rejects with the reason, nothing listens', async () => {
    await hs.close();
    hs = await startFakeHomeserver({ users: TOKENS });
    hs.createRoom({ id: ROOM, members: [OWNER, BOT], encrypted: true });
    const started = boot().then(
      () => 'started',
      (error: unknown) => String(error),
    );
    expect(await started).toMatch(/encrypted/);
    expect(broker).toBeUndefined();
    expect(log.some((l) => l.includes('approval gateway refused to start'))).toBe(true);
  });
});
