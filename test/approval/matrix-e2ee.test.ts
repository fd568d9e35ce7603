/**
 * The approval room with `matrix.encryption: required`, end to end with real crypto on
 * both sides: the gateway (matrix-js-sdk + Rust crypto) against the fake homeserver,
 * the owner's pinned phone and an unpinned session of the owner's account as real
 * matrix-js-sdk clients with Rust crypto (support/matrix.ts, e2eeRig). Attack-named
 * suites for each way a decision could be forged; the lying homeserver's own attacks
 * are in matrix-edits, matrix-votes, matrix-replay and matrix-gap.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_FILE } from '../../broker/approval/matrix/e2ee/identity-store.js';
import { eventSeenBy } from '../../support/e2ee-client.js';
import { BOT, e2eeRig, OWNER, ROOM, TOKENS, type E2eeRig } from '../../support/matrix.js';
import { until } from '../../support/until.js';
import { fetchPreflightClient } from '../../broker/doctor/matrix-client.js';
import {
  checkEncryption,
  CLEAR_TEXT_WARNING,
  OWNER_SOCKET_NOTE,
  REQUIRED_MODE_NOTE,
} from '../../broker/doctor/matrix-devices.js';

const CLEAR_ROOM = '!clear:hs.test';

let rig: E2eeRig;

async function masterKey(): Promise<unknown> {
  const res = await fetch(`${rig.hs.url}/_matrix/client/v3/keys/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS[OWNER]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ device_keys: { [BOT]: [] } }),
  });
  const json = (await res.json()) as { master_keys: Record<string, unknown> };
  return json.master_keys[BOT];
}

beforeAll(async () => {
  rig = await e2eeRig();
  rig.hs.createRoom({ id: CLEAR_ROOM, members: [OWNER, BOT] });
}, 30_000);

afterAll(async () => {
  await rig.close();
});

describe('posting in an encrypted room', () => {
  it('the request and its poll reach the homeserver encrypted; the pinned phone reads both', async () => {
    const { id, messageId, pollId } = await rig.post();
    expect(rig.hs.event(messageId)?.type).toBe('m.room.encrypted');
    expect(JSON.stringify(rig.hs.event(messageId)?.content)).not.toContain('Documents/taxes');
    expect(rig.hs.event(pollId)?.type).toBe('m.room.encrypted');
    const message = await eventSeenBy(rig.phone, ROOM, messageId);
    expect(message.isDecryptionFailure()).toBe(false);
    expect(String(message.getClearContent()?.['body'])).toContain(`Request ${id}`);
    const poll = await eventSeenBy(rig.phone, ROOM, pollId);
    expect(poll.getType()).toBe('org.matrix.msc3381.poll.start');
    expect(JSON.stringify(poll.getClearContent())).toContain('approve');
    expect(rig.gw.healthy()).toBe(true);
  });

  it('keeps the identity in the data folder, encrypted, readable by the owner only', () => {
    const path = join(rig.dataDir, IDENTITY_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe('unpinned session of the owner cannot read requests', () => {
  it('the room key is withheld from it: the request does not decrypt', async () => {
    const { messageId } = await rig.post([['Secret/plans', 'read']]);
    await eventSeenBy(rig.phone, ROOM, messageId);
    const seen = await eventSeenBy(rig.laptop, ROOM, messageId);
    expect(seen.isDecryptionFailure()).toBe(true);
    expect(JSON.stringify(seen.getContent())).not.toContain('Secret/plans');
  });
});

describe('decisions from the pinned phone', () => {
  it('a typed "approve N" grants it', async () => {
    const { id, messageId } = await rig.post();
    await eventSeenBy(rig.phone, ROOM, messageId);
    const h = await rig.handledOf(await rig.say(rig.phone, `approve ${id}`));
    expect(h.kind).toBe('text');
    expect(rig.active(id).map((g) => g.path)).toEqual(['Documents/taxes']);
    expect(rig.core.store.getRequest(id)?.decidedBy).toBe(OWNER);
  });

  it('one tap on the poll ("approve") grants it; "deny" denies another', async () => {
    const first = await rig.post([['Photos/2024', 'write']]);
    expect((await rig.handledOf(await rig.vote(rig.phone, first.pollId, 'approve'))).kind).toBe(
      'vote',
    );
    expect(rig.active(first.id).map((g) => [g.path, g.mode])).toEqual([['Photos/2024', 'write']]);
    const second = await rig.post();
    await rig.handledOf(await rig.vote(rig.phone, second.pollId, 'deny'));
    expect(rig.core.store.getRequest(second.id)?.state).toBe('denied');
    expect(rig.active(second.id)).toEqual([]);
  });
});

describe("attack: a decision from an unpinned session of the owner's account", () => {
  it('a typed approve is ignored, audited with the session id, and reported in the room', async () => {
    const { id } = await rig.post();
    const eventId = await rig.say(rig.laptop, `approve ${id}`);
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    expect(rig.active(id)).toEqual([]);
    expect(rig.core.store.getRequest(id)?.state).toBe('pending');
    const refusal = rig.core
      .records()
      .find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'unpinned_device', device_id: rig.laptop.deviceId });
    const notice = `a decision for request ${id} came from session ${rig.laptop.deviceId}, which is not pinned; ignored`;
    await until('the notice reaches the phone', async () =>
      (await rig.noticesSeenBy(rig.phone)).includes(notice),
    );
  });

  it('a poll vote is ignored', async () => {
    const { id, pollId } = await rig.post();
    expect((await rig.handledOf(await rig.vote(rig.laptop, pollId, 'approve'))).kind).toBe(
      'refused_device',
    );
    expect(rig.active(id)).toEqual([]);
  });
});

describe('attack: a 👍 reaction (sent unencrypted)', () => {
  it("grants nothing and is answered with how to decide, naming no request (event ids are the homeserver's)", async () => {
    const { id, messageId } = await rig.post();
    const reaction = await rig.send(rig.phone, 'm.reaction', {
      'm.relates_to': { rel_type: 'm.annotation', event_id: messageId, key: '👍' },
    });
    // Sent in the clear, even from the pinned phone.
    expect(rig.hs.event(reaction)?.type).toBe('m.reaction');
    const h = await rig.handledOf(reaction);
    expect(h.kind).toBe('reaction_refused');
    expect(h.reply?.text).toContain('"approve N"');
    expect(h.reply?.text).not.toContain(String(id));
    expect(rig.active(id)).toEqual([]);
  });
});

describe('attack: a clear-text "approve" injected by the homeserver', () => {
  it('grants nothing and is audited as not encrypted', async () => {
    const { id } = await rig.post();
    const eventId = rig.hs.sayAs(OWNER, ROOM, `approve ${id}`);
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    expect(rig.active(id)).toEqual([]);
    const refusal = rig.core
      .records()
      .find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'not_encrypted' });
  });

  it('an injected poll vote grants nothing either', async () => {
    const { id, pollId } = await rig.post();
    const eventId = rig.hs.sendAs(OWNER, ROOM, 'org.matrix.msc3381.poll.response', {
      'm.relates_to': { rel_type: 'm.reference', event_id: pollId },
      'org.matrix.msc3381.poll.response': { answers: ['approve'] },
    });
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    expect(rig.active(id)).toEqual([]);
  });
});

describe('attack: an undecryptable event', () => {
  it('is audited, not guessed', async () => {
    const eventId = rig.hs.sendAs(OWNER, ROOM, 'm.room.encrypted', {
      algorithm: 'm.megolm.v1.aes-sha2',
      sender_key: 'bm90IGEga2V5',
      session_id: 'nonexistent',
      ciphertext: 'AwgAEhAAAAAAAAAA',
      device_id: rig.phone.deviceId,
    });
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    const refusal = rig.core
      .records()
      .find((r) => r.event === 'refused' && r['event_id'] === eventId);
    expect(refusal).toMatchObject({ reason: 'undecryptable' });
  });
});

describe('a restart of the bot', () => {
  it('keeps one identity, deletes the old session, and approvals still work', async () => {
    const master = await masterKey();
    expect(master).toBeDefined();
    const oldDevices = rig.hs.devices(BOT);
    await rig.restart();
    expect(await masterKey()).toEqual(master);
    // Sessions the bot logged in as have random ids; the access token's is DEVn.
    const loggedIn = (ids: string[]) => ids.filter((d) => !d.startsWith('DEV'));
    expect(loggedIn(oldDevices)).toHaveLength(1);
    const now = loggedIn(rig.hs.devices(BOT));
    expect(now).toHaveLength(1);
    expect(now).not.toEqual(loggedIn(oldDevices));
    const { id, messageId } = await rig.post();
    await eventSeenBy(rig.phone, ROOM, messageId);
    expect((await rig.handledOf(await rig.say(rig.phone, `approve ${id}`))).kind).toBe('text');
    expect(rig.active(id)).toHaveLength(1);
  }, 30_000);
});

describe('broker doctor', () => {
  it("lists the approver's sessions with their keys, marks the pinned one, prints the line to pin another", async () => {
    const cfg = rig.config();
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), rig.dataDir);
    const phoneCheck = checks.find((c) => c.label.includes(`session ${rig.phone.deviceId}`));
    expect(phoneCheck).toMatchObject({ status: 'pass' });
    expect(phoneCheck?.label).toContain(`key ${rig.phone.ed25519}: pinned`);
    const laptopCheck = checks.find((c) => c.label.includes(`session ${rig.laptop.deviceId}`));
    expect(laptopCheck?.status).toBe('warn');
    expect(laptopCheck?.fix).toContain(`- "${rig.laptop.deviceId} ${rig.laptop.ed25519}"`);
    expect(checks.some((c) => c.status === 'fail')).toBe(false);
    // What the mode proves and what a homeserver can still do.
    expect(checks).toContainEqual(
      expect.objectContaining({ status: 'pass', label: REQUIRED_MODE_NOTE }),
    );
    expect(REQUIRED_MODE_NOTE).toContain('can no longer make');
    expect(REQUIRED_MODE_NOTE).toContain('withhold or delay');
    // The pins bind the room, not the owner socket: doctor says who else decides.
    expect(checks.at(-1)).toMatchObject({ status: 'pass', label: OWNER_SOCKET_NOTE });
  });

  it('fails when the pinned key is not the one the homeserver reports', async () => {
    const cfg = rig.config({
      approver_devices: [{ deviceId: rig.phone.deviceId, ed25519: rig.laptop.ed25519 }],
    });
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), rig.dataDir);
    expect(checks.find((c) => c.label.includes(rig.phone.deviceId))?.status).toBe('fail');
  });

  it('warns in clear-text mode what a decision there proves', async () => {
    const cfg = rig.config({ encryption: 'off' });
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), rig.dataDir);
    expect(checks).toEqual([
      expect.objectContaining({ status: 'warn', label: CLEAR_TEXT_WARNING }),
    ]);
  });
});

describe('refusing to start', () => {
  it('in an unencrypted room with encryption required, naming matrix.encryption', async () => {
    const err = await rig
      .gateway({ room_id: CLEAR_ROOM })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'not_encrypted' });
    expect(String((err as Error).message)).toContain('matrix.encryption');
  });

  it('attack: an identity file written with another secret (or replaced): identity_unreadable, never a new identity', async () => {
    const before = statSync(join(rig.dataDir, IDENTITY_FILE)).mtimeMs;
    const other = 'another-crypto-secret-0123456789abcdef';
    const err = await rig
      .gateway({ crypto_secret: other })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'identity_unreadable' });
    expect(String((err as Error).message)).toContain('matrix.crypto_secret');
    expect(String((err as Error).message)).not.toContain(other);
    // The stored identity is left as it was: not replaced by one the start would make.
    expect(statSync(join(rig.dataDir, IDENTITY_FILE)).mtimeMs).toBe(before);
  });

  it('a second start on a bot_token session that already ran encrypted: stale_session, naming the fix', async () => {
    const onToken = () => rig.gateway({ bot_password: undefined });
    await rig.gw.stop();
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
    const err = await rig
      .gateway({ bot_password: 'not-the-bot-password-1' })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unauthorized' });
    expect(String((err as Error).message)).toContain('matrix.bot_password');
    expect(String((err as Error).message)).not.toContain('not-the-bot-password-1');
  });
});
