/**
 * `broker pair`, `broker pins` and `broker unpin` (docs/contracts.md §6) as real
 * subprocesses against a running broker whose approval room is encrypted and whose
 * configuration pins no device: the owner's phone (real matrix-js-sdk with Rust crypto)
 * is paired with a code, confirmed with "yes" on the command's stdin, and from then on
 * reads the room and decides; a decision made with `broker approve` reaches the room
 * naming the shell; `--expect` naming another device, a "no" at the prompt and an
 * unpin each do what they say, with their exit codes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_PINS_WARNING } from '../../../broker/approval/matrix/gateway.js';
import { groupedKey } from '../../../broker/approval/pairing/code.js';
import { startBroker, type RunningBroker } from '../../../broker/main.js';
import { startFakeHomeserver, type FakeHomeserver } from '../../../fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../../fakes/nextcloud.js';
import { e2eeClient, type E2eeClient } from '../../../support/e2ee-client.js';
import {
  BOT,
  E2EE_BOT_PASSWORD,
  E2EE_CRYPTO_SECRET,
  OWNER,
  ROOM,
  TOKENS,
} from '../../../support/matrix.js';
import { callTool, connectMcp } from '../../../support/mcp.js';
import { runCli, spawnBrokerCommand } from '../../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../../support/tokens.js';
import { until } from '../../../support/until.js';

let hs: FakeHomeserver;
let nc: FakeNextcloud;
let dir: string;
let config: string;
let broker: RunningBroker | undefined;
let agent: Client | undefined;
let phone: E2eeClient;
let laptop: E2eeClient;
const log: string[] = [];

beforeAll(async () => {
  hs = await startFakeHomeserver({
    users: { ...TOKENS, [BOT]: { token: TOKENS[BOT], password: E2EE_BOT_PASSWORD } },
  });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT], encrypted: true });
  nc = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'pairing-cli-'));
  [phone, laptop] = await Promise.all([
    e2eeClient(hs, OWNER, 'PHONEDEVICE'),
    e2eeClient(hs, OWNER, 'LAPTOPDEVICE'),
  ]);
  config = join(dir, 'config.yaml');
  writeFileSync(
    config,
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
      '  encryption: required',
      '  crypto_secret_env: T_CRYPTO',
      '  bot_password_env: T_BOT_PASSWORD',
      'data_dir: ./data',
      'logging: { level: info }',
      'instances:',
      `  personal: { url: "${nc.url}", username: ${nc.user}, app_password_env: T_NC, discovery: false }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  broker = await startBroker(config, {
    env: {
      T_AGENT: AGENT_TOKEN,
      T_TRANSFER: TRANSFER_TOKEN,
      T_MATRIX: TOKENS[BOT],
      T_NC: APP_PASSWORD,
      T_CRYPTO: E2EE_CRYPTO_SECRET,
      T_BOT_PASSWORD: E2EE_BOT_PASSWORD,
    },
    writeLog: (line) => log.push(line),
    stdin: new PassThrough(),
    stdout: new PassThrough(),
  });
  agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await broker?.stop();
  phone.stop();
  laptop.stop();
  await hs.close();
  await nc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The owner's second shell: `broker <args>` in the config's folder, no secrets. */
const shell = (...args: string[]) => runCli([...args, '--config', config], {});
const pairProcess = (...args: string[]) =>
  spawnBrokerCommand(['pair', ...args, '--config', config], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });

/** What `c` reads of the bot's messages, decrypted. */
async function readsFromBot(c: E2eeClient, text: string): Promise<void> {
  await until(`${c.deviceId} reads "${text}"`, async () =>
    (await c.events(ROOM)).some(
      (e) =>
        e.getSender() === BOT &&
        !e.isDecryptionFailure() &&
        String(e.getClearContent()?.['body'] ?? '').includes(text),
    ),
  );
}

async function request(path: string): Promise<number> {
  if (agent === undefined) throw new Error('no agent');
  const asked = await callTool(agent, 'request_access', {
    instance: 'personal',
    reason: 'pairing test',
    items: [{ path, mode: 'read' }],
  });
  expect(asked.status).toBe('pending');
  return asked.request as number;
}

/** Starts `broker pair`, has `c` type its code; returns the process and the code. */
async function pairFrom(c: E2eeClient, ...args: string[]) {
  const proc = pairProcess(...args);
  const out = await proc.waitFor(/Pairing code: (\S+)/);
  const code = /Pairing code: (\S+)/.exec(out)?.[1] ?? '';
  await c.client.sendTextMessage(ROOM, `pair ${code}`);
  return { proc, code };
}

describe('a broker with no pinned device', () => {
  it('starts, says so, and broker pins lists none', async () => {
    expect(log.some((l) => l.includes(NO_PINS_WARNING.slice(0, 40)))).toBe(true);
    const listed = await shell('pins', '--json');
    expect(listed).toMatchObject({ code: 0, json: { status: 'ok', pins: [] } });
    expect((await shell('pins')).stdout).toContain('No device is pinned');
  });
});

describe('broker pair', () => {
  it('shows the device that sent the code; "no" pins nothing (exit 3)', async () => {
    const { proc } = await pairFrom(laptop);
    await proc.waitFor('Pin this session?');
    expect(proc.stdout()).toContain(`Session ID:   ${laptop.deviceId}`);
    proc.type('no');
    expect(await proc.exited).toBe(3);
    expect(proc.stdout()).toContain('you did not confirm');
    expect((await shell('pins', '--json')).json).toMatchObject({ pins: [] });
  }, 30_000);

  it('--expect naming another device: the phone pins nothing (exit 3)', async () => {
    const { proc } = await pairFrom(phone, '--expect', 'SOMEOTHER');
    expect(await proc.exited).toBe(3);
    expect(proc.stdout()).toContain('--expect named another device');
    expect(proc.stdout()).not.toContain('Pin this session?');
  }, 30_000);

  it('pins the phone on "yes" after showing its session ID and key (exit 0); the phone then reads and decides', async () => {
    const { proc } = await pairFrom(phone);
    await proc.waitFor('Pin this session?');
    expect(proc.stdout()).toContain(`Session ID:   ${phone.deviceId}`);
    expect(proc.stdout()).toContain(`Session key:  ${groupedKey(phone.ed25519)}`);
    expect(proc.stdout()).toContain('Unable to decrypt');
    proc.type('yes');
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toContain(`Pinned session ${phone.deviceId}`);
    expect((await shell('pins', '--json')).json).toMatchObject({
      status: 'ok',
      pins: [{ device_id: phone.deviceId, ed25519: phone.ed25519, origin: 'paired' }],
    });
    await readsFromBot(phone, `Pinned session \`${phone.deviceId}\``);

    const id = await request('Reports');
    await readsFromBot(phone, `Request ${id}`);
    await phone.client.sendTextMessage(ROOM, `approve ${id}`);
    await until('approved', async () => {
      const state = await callTool(agent as Client, 'check_access', { request: id });
      return state.status === 'ok';
    });
  }, 60_000);

  it('a decision made with broker approve reaches the room, naming the shell', async () => {
    const id = await request('Invoices');
    const approved = await shell('approve', String(id));
    expect(approved.code).toBe(0);
    await readsFromBot(
      phone,
      `From a shell on the broker's host (owner socket): broker approve ${id}`,
    );
  }, 30_000);
});

describe('broker unpin', () => {
  it('removes the paired phone (exit 0), then has nothing to remove (exit 3)', async () => {
    const removed = await shell('unpin', phone.deviceId, '--json');
    expect(removed).toMatchObject({
      code: 0,
      json: { status: 'ok', unpinned: { device_id: phone.deviceId } },
    });
    expect((await shell('unpin', phone.deviceId)).code).toBe(3);
    expect((await shell('pins', '--json')).json).toMatchObject({ pins: [] });
  });

  it('usage errors exit 1; no broker for the data folder exits 2', async () => {
    expect((await shell('unpin')).code).toBe(1);
    expect((await runCli(['pair', '--expect'], {})).code).toBe(1);
    const empty = mkdtempSync(join(tmpdir(), 'pairing-none-'));
    try {
      writeFileSync(join(empty, 'config.yaml'), 'data_dir: ./data\n');
      expect((await runCli(['pins', '--config', join(empty, 'config.yaml')], {})).code).toBe(2);
      const none = await runCli(['pair', '--config', join(empty, 'config.yaml')], {});
      expect(none.code).toBe(2);
      expect(none.stderr).toContain('no broker is running');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
