/**
 * Attacks on an encrypted approval room that the device pins already held, kept held:
 * clear-text decisions the homeserver makes up (in the owner's name, and in the bot's),
 * a deny and an approve that race, the bot's own account, and a new key under the
 * pinned device's id. Real matrix-js-sdk and Rust crypto on the phone, the agent's
 * session of the owner's account and the bot; the lying fake homeserver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eeClient, eventSeenBy } from '../../support/e2ee-client.js';
import { BOT, e2eeRig, OWNER, ROOM, voteContent, type E2eeRig } from '../../support/matrix.js';

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig();
}, 30_000);
afterAll(async () => {
  await rig.close();
});

describe("attack: clear-text decisions the homeserver makes up in the owner's name", () => {
  it('a typed approve and a vote grant nothing, are audited not_encrypted, and the owner is told once', async () => {
    const { id, pollId } = await rig.post();
    const forged = [
      rig.hs.lie.inject(OWNER, ROOM, 'm.room.message', {
        msgtype: 'm.text',
        body: `approve ${id}`,
      }),
      rig.hs.lie.inject(OWNER, ROOM, 'm.room.message', {
        msgtype: 'm.text',
        body: `approve ${id} 1`,
      }),
      rig.hs.lie.inject(
        OWNER,
        ROOM,
        'org.matrix.msc3381.poll.response',
        voteContent(pollId, await rig.answerId(pollId, 'approve')),
      ),
    ];
    for (const eventId of forged) {
      expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
      expect(rig.refusals(eventId)).toEqual([expect.objectContaining({ reason: 'not_encrypted' })]);
    }
    expect(rig.state(id)).toBe('pending');
    await rig.settled();
    const told = (await rig.noticesSeenBy(rig.phone)).filter((t) =>
      t.startsWith(`a decision for request ${id} arrived unencrypted`),
    );
    expect(told).toHaveLength(1);
  });
});

describe("attack: the bot's own account", () => {
  it("a clear-text approve in the bot's name decides nothing", async () => {
    const { id } = await rig.post();
    const forged = rig.hs.lie.inject(BOT, ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: `approve ${id}`,
    });
    expect((await rig.handledOf(forged)).kind).toBe('ignore');
    expect(rig.state(id)).toBe('pending');
  });

  it("an encrypted approve from another session of the bot's account decides nothing", async () => {
    const { id } = await rig.post();
    const botSession = await e2eeClient(rig.hs, BOT);
    try {
      const sent = await rig.say(botSession, `approve ${id}`);
      expect((await rig.handledOf(sent)).kind).toBe('ignore');
      expect(rig.state(id)).toBe('pending');
    } finally {
      botSession.stop();
    }
  });
});

describe('a deny and an approve of the phone that race', () => {
  it('exactly one decides, the other is answered "already decided", and the grants match', async () => {
    const { id, pollId } = await rig.post();
    const [deny, approve] = await Promise.all([
      rig.say(rig.phone, `deny ${id}`),
      rig.vote(rig.phone, pollId, 'approve'),
    ]);
    const answers = await Promise.all([rig.handledOf(deny), rig.handledOf(approve)]);
    const decided = rig.decisions(id).filter((d) => d['outcome'] !== 'refused');
    expect(decided).toHaveLength(1);
    expect(answers.filter((h) => h.reply?.text.includes('already decided'))).toHaveLength(1);
    const final = rig.state(id);
    expect(final === 'denied' || final === 'approved').toBe(true);
    expect(rig.active(id)).toHaveLength(final === 'approved' ? 1 : 0);
  });
});

describe("attack: a new key under the pinned device's id", () => {
  it('the session holding it can neither read requests nor decide', async () => {
    // The agent (or the homeserver) takes the pinned id for a session of its own.
    const taken = rig.hs.lie.replaceDevice(OWNER, rig.phone.deviceId);
    rig.phone.stop();
    const impostor = await e2eeClient(rig.hs, OWNER, undefined, taken);
    try {
      expect(impostor.deviceId).toBe(rig.phone.deviceId);
      expect(impostor.ed25519).not.toBe(rig.phone.ed25519);
      const { id, messageId } = await rig.post([['Secret/plans', 'read']]);
      const sent = await rig.say(impostor, `approve ${id}`);
      expect((await rig.handledOf(sent)).kind).toBe('refused_device');
      expect(rig.refusals(sent)).toEqual([
        expect.objectContaining({ reason: 'unpinned_device', device_id: rig.phone.deviceId }),
      ]);
      expect(rig.state(id)).toBe('pending');
      const request = await eventSeenBy(impostor, ROOM, messageId);
      expect(request.isDecryptionFailure()).toBe(true);
    } finally {
      impostor.stop();
    }
  }, 30_000);
});
