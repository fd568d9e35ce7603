/**
 * The approval room with `matrix.encryption: required`, end to end with real crypto on
 * both sides: the gateway (matrix-js-sdk + Rust crypto) against the fake homeserver,
 * the owner's pinned phone and an unpinned session of the owner's account as real
 * matrix-js-sdk clients with Rust crypto. Attack-named suites for each way a decision
 * could be forged.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../broker/base/log.js';
import type { MatrixConfig } from '../../broker/config.js';
import { IDENTITY_FILE } from '../../broker/approval/matrix/e2ee/identity-store.js';
import { MatrixGateway, type HandledEvent } from '../../broker/approval/matrix/gateway.js';
import { startFakeHomeserver, type FakeHomeserver } from '../../fakes/homeserver.js';
import { harness, LIFECYCLE, type Harness } from '../../support/approval.js';
import { e2eeClient, eventSeenBy, type E2eeClient } from '../../support/e2ee-client.js';
import { BOT, FAST, OWNER, ROOM, TOKENS } from '../../support/matrix.js';
import { until } from '../../support/until.js';
import { fetchPreflightClient } from '../../broker/doctor/matrix-client.js';
import {
  checkEncryption,
  CLEAR_TEXT_WARNING,
  OWNER_SOCKET_NOTE,
} from '../../broker/doctor/matrix-devices.js';

const BOT_PASSWORD = 'bot-password-0123456789';
const CRYPTO_SECRET = 'crypto-secret-0123456789abcdef0123456789';
const CLEAR_ROOM = '!clear:hs.test';

let hs: FakeHomeserver;
let core: Harness;
let phone: E2eeClient;
let laptop: E2eeClient;
let dataDir: string;
let gw: MatrixGateway;
const handled: HandledEvent[] = [];
const logger = memoryLogger();

function matrixConfig(over: Partial<MatrixConfig> = {}): MatrixConfig {
  return {
    homeserver: hs.url,
    bot_user: BOT,
    bot_token: TOKENS[BOT],
    room_id: ROOM,
    approver: OWNER,
    encryption: 'required',
    approver_devices: [{ deviceId: phone.deviceId, ed25519: phone.ed25519 }],
    crypto_secret: CRYPTO_SECRET,
    bot_password: BOT_PASSWORD,
    ...over,
  };
}

function gateway(over: Partial<MatrixConfig> = {}): MatrixGateway {
  return gatewayWith(matrixConfig(over));
}

function gatewayWith(matrix: MatrixConfig): MatrixGateway {
  return new MatrixGateway({
    config: { matrix, lifecycle: LIFECYCLE },
    engine: core.engine,
    logger,
    now: () => core.clock.now,
    audit: core.audit,
    options: { ...FAST, startWhileUnreachable: false },
    onHandled: (e) => handled.push(e),
    dataDir,
  });
}

async function handledOf(eventId: string): Promise<HandledEvent> {
  await until(`event ${eventId} handled`, () => handled.some((h) => h.eventId === eventId));
  const found = handled.find((h) => h.eventId === eventId);
  if (found === undefined) throw new Error('unreachable');
  return found;
}

/** Posts a new request; returns its number and the ids of its message and poll. */
async function post(items: [string, 'read' | 'write'][] = [['Documents/taxes', 'read']]) {
  const before = hs.timeline(ROOM).length;
  const id = core.request(items, 'personal');
  const request = core.store.getRequest(id);
  if (request === undefined) throw new Error('request vanished');
  await gw.postRequest(request);
  const mine = hs
    .timeline(ROOM)
    .slice(before)
    .filter((e) => e.sender === BOT);
  const [message, poll] = mine;
  if (message === undefined || poll === undefined) throw new Error('no message and poll');
  return { id, messageId: message.event_id, pollId: poll.event_id };
}

const active = (requestId: number) =>
  core.store.activeGrants().filter((g) => g.requestId === requestId);

async function botMessagesSeenBy(c: E2eeClient): Promise<string[]> {
  const events = await c.events(ROOM);
  return events
    .filter((e) => e.getSender() === BOT && !e.isDecryptionFailure())
    .map((e) => String(e.getContent()['body'] ?? ''));
}

async function say(c: E2eeClient, body: string): Promise<string> {
  return (await c.client.sendTextMessage(ROOM, body)).event_id;
}

/** Sends any event type as `c` (the SDK types only the ones it knows). */
async function sendAs(c: E2eeClient, type: string, content: object): Promise<string> {
  const send = c.client.sendEvent.bind(c.client) as unknown as (
    roomId: string,
    type: string,
    content: object,
  ) => Promise<{ event_id: string }>;
  return (await send(ROOM, type, content)).event_id;
}

function vote(c: E2eeClient, pollId: string, answer: string): Promise<string> {
  return sendAs(c, 'org.matrix.msc3381.poll.response', {
    'm.relates_to': { rel_type: 'm.reference', event_id: pollId },
    'org.matrix.msc3381.poll.response': { answers: [answer] },
  });
}

async function masterKey(): Promise<unknown> {
  const res = await fetch(`${hs.url}/_matrix/client/v3/keys/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS[OWNER]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ device_keys: { [BOT]: [] } }),
  });
  const json = (await res.json()) as { master_keys: Record<string, unknown> };
  return json.master_keys[BOT];
}

beforeAll(async () => {
  hs = await startFakeHomeserver({
    users: {
      ...TOKENS,
      [BOT]: { token: TOKENS[BOT], password: BOT_PASSWORD },
    },
  });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT], encrypted: true });
  hs.createRoom({ id: CLEAR_ROOM, members: [OWNER, BOT] });
  dataDir = mkdtempSync(join(tmpdir(), 'broker-e2ee-'));
  core = await harness();
  [phone, laptop] = await Promise.all([
    e2eeClient(hs, OWNER, 'PHONEDEVICE'),
    e2eeClient(hs, OWNER, 'LAPTOPDEVICE'),
  ]);
  gw = gateway();
  await gw.start();
}, 30_000);

afterAll(async () => {
  await gw.stop();
  phone.stop();
  laptop.stop();
  await hs.close();
  await core.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('posting in an encrypted room', () => {
  it('the request and its poll reach the homeserver encrypted; the pinned phone reads both', async () => {
    const { id, messageId, pollId } = await post();
    expect(hs.event(messageId)?.type).toBe('m.room.encrypted');
    expect(JSON.stringify(hs.event(messageId)?.content)).not.toContain('Documents/taxes');
    expect(hs.event(pollId)?.type).toBe('m.room.encrypted');
    const message = await eventSeenBy(phone, ROOM, messageId);
    expect(message.isDecryptionFailure()).toBe(false);
    expect(String(message.getContent()['body'])).toContain(`Request ${id}`);
    const poll = await eventSeenBy(phone, ROOM, pollId);
    expect(poll.getType()).toBe('org.matrix.msc3381.poll.start');
    expect(JSON.stringify(poll.getContent())).toContain('approve');
    expect(gw.healthy()).toBe(true);
  });

  it('keeps the identity in the data folder, encrypted, readable by the owner only', () => {
    const path = join(dataDir, IDENTITY_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe('unpinned session of the owner cannot read requests', () => {
  it('the room key is withheld from it: the request does not decrypt', async () => {
    const { messageId } = await post([['Secret/plans', 'read']]);
    await eventSeenBy(phone, ROOM, messageId);
    const seen = await eventSeenBy(laptop, ROOM, messageId);
    expect(seen.isDecryptionFailure()).toBe(true);
    expect(JSON.stringify(seen.getContent())).not.toContain('Secret/plans');
  });
});

describe('decisions from the pinned phone', () => {
  it('a typed "approve N" grants it', async () => {
    const { id, messageId } = await post();
    await eventSeenBy(phone, ROOM, messageId);
    const h = await handledOf(await say(phone, `approve ${id}`));
    expect(h.kind).toBe('text');
    expect(active(id).map((g) => g.path)).toEqual(['Documents/taxes']);
    expect(core.store.getRequest(id)?.decidedBy).toBe(OWNER);
  });

  it('one tap on the poll ("approve") grants it; "deny" denies another', async () => {
    const first = await post([['Photos/2024', 'write']]);
    expect((await handledOf(await vote(phone, first.pollId, 'approve'))).kind).toBe('vote');
    expect(active(first.id).map((g) => [g.path, g.mode])).toEqual([['Photos/2024', 'write']]);
    const second = await post();
    await handledOf(await vote(phone, second.pollId, 'deny'));
    expect(core.store.getRequest(second.id)?.state).toBe('denied');
    expect(active(second.id)).toEqual([]);
  });
});

describe("attack: a decision from an unpinned session of the owner's account", () => {
  it('a typed approve is ignored, audited with the session id, and reported in the room', async () => {
    const { id } = await post();
    const eventId = await say(laptop, `approve ${id}`);
    expect((await handledOf(eventId)).kind).toBe('refused_device');
    expect(active(id)).toEqual([]);
    expect(core.store.getRequest(id)?.state).toBe('pending');
    const refusal = core.records().find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'unpinned_device', device_id: laptop.deviceId });
    const notice = `a decision for request ${id} came from session ${laptop.deviceId}, which is not pinned; ignored`;
    await until('the notice reaches the phone', async () =>
      (await botMessagesSeenBy(phone)).includes(notice),
    );
  });

  it('a poll vote is ignored', async () => {
    const { id, pollId } = await post();
    expect((await handledOf(await vote(laptop, pollId, 'approve'))).kind).toBe('refused_device');
    expect(active(id)).toEqual([]);
  });
});

describe('attack: a 👍 reaction (sent unencrypted)', () => {
  it('grants nothing and is answered with how to decide', async () => {
    const { id, messageId } = await post();
    const reaction = await sendAs(phone, 'm.reaction', {
      'm.relates_to': { rel_type: 'm.annotation', event_id: messageId, key: '👍' },
    });
    // Sent in the clear, even from the pinned phone.
    expect(hs.event(reaction)?.type).toBe('m.reaction');
    const h = await handledOf(reaction);
    expect(h.kind).toBe('reaction_refused');
    expect(h.reply?.text).toContain(`approve ${id}`);
    expect(active(id)).toEqual([]);
  });
});

describe('attack: a clear-text "approve" injected by the homeserver', () => {
  it('grants nothing and is audited as not encrypted', async () => {
    const { id } = await post();
    const eventId = hs.sayAs(OWNER, ROOM, `approve ${id}`);
    expect((await handledOf(eventId)).kind).toBe('refused_device');
    expect(active(id)).toEqual([]);
    const refusal = core.records().find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'not_encrypted' });
  });

  it('an injected poll vote grants nothing either', async () => {
    const { id, pollId } = await post();
    const eventId = hs.sendAs(OWNER, ROOM, 'org.matrix.msc3381.poll.response', {
      'm.relates_to': { rel_type: 'm.reference', event_id: pollId },
      'org.matrix.msc3381.poll.response': { answers: ['approve'] },
    });
    expect((await handledOf(eventId)).kind).toBe('refused_device');
    expect(active(id)).toEqual([]);
  });
});

describe('attack: an undecryptable event', () => {
  it('is audited, not guessed', async () => {
    const eventId = hs.sendAs(OWNER, ROOM, 'm.room.encrypted', {
      algorithm: 'm.megolm.v1.aes-sha2',
      sender_key: 'bm90IGEga2V5',
      session_id: 'nonexistent',
      ciphertext: 'AwgAEhAAAAAAAAAA',
      device_id: phone.deviceId,
    });
    expect((await handledOf(eventId)).kind).toBe('refused_device');
    const refusal = core.records().find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'undecryptable' });
  });
});

describe('a restart of the bot', () => {
  it('keeps one identity, deletes the old session, and approvals still work', async () => {
    const master = await masterKey();
    expect(master).toBeDefined();
    const oldDevices = hs.devices(BOT);
    await gw.stop();
    gw = gateway();
    await gw.start();
    expect(await masterKey()).toEqual(master);
    // Sessions the bot logged in as have random ids; the access token's is DEVn.
    const loggedIn = (ids: string[]) => ids.filter((d) => !d.startsWith('DEV'));
    expect(loggedIn(oldDevices)).toHaveLength(1);
    const now = loggedIn(hs.devices(BOT));
    expect(now).toHaveLength(1);
    expect(now).not.toEqual(loggedIn(oldDevices));
    const { id, messageId } = await post();
    await eventSeenBy(phone, ROOM, messageId);
    expect((await handledOf(await say(phone, `approve ${id}`))).kind).toBe('text');
    expect(active(id)).toHaveLength(1);
  }, 30_000);
});

describe('broker doctor', () => {
  it("lists the approver's sessions with their keys, marks the pinned one, prints the line to pin another", async () => {
    const cfg = matrixConfig();
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), dataDir);
    const phoneCheck = checks.find((c) => c.label.includes(`session ${phone.deviceId}`));
    expect(phoneCheck).toMatchObject({ status: 'pass' });
    expect(phoneCheck?.label).toContain(`key ${phone.ed25519}: pinned`);
    const laptopCheck = checks.find((c) => c.label.includes(`session ${laptop.deviceId}`));
    expect(laptopCheck?.status).toBe('warn');
    expect(laptopCheck?.fix).toContain(`- "${laptop.deviceId} ${laptop.ed25519}"`);
    expect(checks.some((c) => c.status === 'fail')).toBe(false);
    // The pins bind the room, not the owner socket: doctor says who else decides.
    expect(checks.at(-1)).toMatchObject({ status: 'pass', label: OWNER_SOCKET_NOTE });
  });

  it('fails when the pinned key is not the one the homeserver reports', async () => {
    const cfg = matrixConfig({
      approver_devices: [{ deviceId: phone.deviceId, ed25519: laptop.ed25519 }],
    });
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), dataDir);
    expect(checks.find((c) => c.label.includes(phone.deviceId))?.status).toBe('fail');
  });

  it('warns in clear-text mode what a decision there proves', async () => {
    const cfg = matrixConfig({ encryption: 'off' });
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), dataDir);
    expect(checks).toEqual([
      expect.objectContaining({ status: 'warn', label: CLEAR_TEXT_WARNING }),
    ]);
  });
});

describe('refusing to start', () => {
  it('in an unencrypted room with encryption required, naming matrix.encryption', async () => {
    const err = await gateway({ room_id: CLEAR_ROOM })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'not_encrypted' });
    expect(String((err as Error).message)).toContain('matrix.encryption');
  });

  it('attack: an identity file written with another secret (or replaced): identity_unreadable, never a new identity', async () => {
    const before = statSync(join(dataDir, IDENTITY_FILE)).mtimeMs;
    const other = 'another-crypto-secret-0123456789abcdef';
    const err = await gateway({ crypto_secret: other })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'identity_unreadable' });
    expect(String((err as Error).message)).toContain('matrix.crypto_secret');
    expect(String((err as Error).message)).not.toContain(other);
    // The stored identity is left as it was: not replaced by one the start would make.
    expect(statSync(join(dataDir, IDENTITY_FILE)).mtimeMs).toBe(before);
  });

  it('a second start on a bot_token session that already ran encrypted: stale_session, naming the fix', async () => {
    const { bot_password: _ignored, ...withoutPassword } = matrixConfig();
    const onToken = (): MatrixGateway => gatewayWith(withoutPassword);
    await gw.stop();
    const first = onToken();
    await first.start();
    await first.stop();
    const err = await onToken()
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'stale_session' });
    const message = String((err as Error).message);
    expect(message).toContain('matrix.bot_password');
    expect(message).toContain('matrix.bot_token');
    expect(message).not.toContain(TOKENS[BOT]);
  }, 30_000);

  it('with a wrong bot password, naming matrix.bot_password', async () => {
    const err = await gateway({ bot_password: 'not-the-bot-password-1' })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unauthorized' });
    expect(String((err as Error).message)).toContain('matrix.bot_password');
    expect(String((err as Error).message)).not.toContain('not-the-bot-password-1');
  });
});
