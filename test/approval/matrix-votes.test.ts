/**
 * Attack: a poll vote counted for another request than the owner voted on. Event ids
 * and relations are the homeserver's to write (the answer to the bot's own send
 * included, and the relation of an encrypted event travels in clear), so a vote counts
 * only for the request its own encrypted answer id names, with the nonce only that
 * request's encrypted poll carried. Real matrix-js-sdk and Rust crypto on the owner's
 * phone, the agent's session of the owner's account and the bot; the lying fake.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_ID_KEY, STORE_ID_KEY } from '../../broker/approval/matrix/gateway.js';
import { BOT, e2eeRig, ROOM, voteContent, type E2eeRig } from '../../support/matrix.js';

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig();
}, 30_000);
afterAll(async () => {
  await rig.close();
});

/** Posts a request whose poll's send the homeserver answers with `answerWith`, never showing it. */
async function postWithLyingPollId(answerWith: string): Promise<number> {
  void rig.hs.lie.nextSend(BOT, {}); // the request message: honest
  void rig.hs.lie.nextSend(BOT, { answerWith, withhold: true }); // its poll
  const { id } = await rig.post();
  return id;
}

describe("attack: the homeserver answers the bot's send of request B's poll with request A's poll id", () => {
  it('the owner approves A on its poll: A is approved, B is not', async () => {
    const a = await rig.post();
    const b = await postWithLyingPollId(a.pollId);
    const vote = await rig.vote(rig.phone, a.pollId, 'approve');
    expect((await rig.handledOf(vote)).kind).toBe('vote');
    expect(rig.state(a.id)).toBe('approved');
    expect(rig.state(b)).toBe('pending');
    expect(rig.active(b)).toEqual([]);
  });

  it('re-sending the old approve vote then approves nothing more', async () => {
    const a = await rig.post();
    const vote = await rig.vote(rig.phone, a.pollId, 'approve');
    await rig.handledOf(vote);
    expect(rig.state(a.id)).toBe('approved');
    const b = await postWithLyingPollId(a.pollId);
    const again = rig.hs.lie.resend(vote);
    await rig.handledOf(again);
    expect(rig.state(b)).toBe('pending');
    expect(rig.active(b)).toEqual([]);
  });
});

describe('attack: a relation the homeserver added or rewrote in clear', () => {
  it('added to a vote whose payload carries none: the vote counts for its own answer, not the relation', async () => {
    const a = await rig.post();
    const b = await rig.post();
    // A vote that carries its answer but no relation (some clients keep relations in
    // clear only); the homeserver adds one naming request B's poll.
    const answer = await rig.answerId(a.pollId, 'approve');
    const { 'm.relates_to': _none, ...bare } = voteContent(a.pollId, answer);
    const vote = await rig.dressed(
      () => rig.send(rig.phone, 'org.matrix.msc3381.poll.response', bare),
      (id) => rig.hs.lie.rewriteRelation(id, { rel_type: 'm.reference', event_id: b.pollId }),
    );
    const h = await rig.handledOf(vote);
    expect(h.kind).toBe('refused_vote');
    expect(rig.state(b.id)).toBe('pending');
    expect(rig.refusals(vote)).toEqual([
      expect.objectContaining({ reason: 'relation_mismatch', request: a.id }),
    ]);
  });

  it("rewritten to another request's poll: refused (relation_mismatch), neither request decided", async () => {
    const a = await rig.post();
    const b = await rig.post();
    const vote = await rig.dressed(
      () => rig.vote(rig.phone, a.pollId, 'approve'),
      (id) => rig.hs.lie.rewriteRelation(id, { rel_type: 'm.reference', event_id: b.pollId }),
    );
    expect((await rig.handledOf(vote)).kind).toBe('refused_vote');
    expect(rig.state(a.id)).toBe('pending');
    expect(rig.state(b.id)).toBe('pending');
  });
});

describe('attack: a vote on a poll the bot did not post with that nonce', () => {
  it("a clear-text poll in the bot's name, voted on by the phone, decides nothing", async () => {
    const { id } = await rig.post();
    // The homeserver cannot read the real poll's nonce; it makes one up.
    const forged = rig.hs.lie.inject(BOT, ROOM, 'org.matrix.msc3381.poll.start', {
      'org.matrix.msc3381.poll.start': {
        question: { 'org.matrix.msc1767.text': `Request ${id}: approve all or deny?` },
        kind: 'org.matrix.msc3381.poll.disclosed',
        max_selections: 1,
        answers: [{ id: `approve-${id}-${'0'.repeat(32)}`, 'org.matrix.msc1767.text': 'Approve' }],
      },
    });
    const vote = await rig.send(
      rig.phone,
      'org.matrix.msc3381.poll.response',
      voteContent(forged, `approve-${id}-${'0'.repeat(32)}`),
    );
    expect((await rig.handledOf(vote)).kind).toBe('refused_vote');
    expect(rig.state(id)).toBe('pending');
    expect(rig.refusals(vote)).toEqual([expect.objectContaining({ reason: 'unknown_poll' })]);
  });
});

describe('attack: a vote on a poll of a previous grant database', () => {
  it('does not decide the new request with the same number', async () => {
    await rig.newDatabase();
    const old = await rig.post();
    const approveOld = await rig.answerId(old.pollId, 'approve');
    await rig.newDatabase();
    const fresh = await rig.post();
    expect(fresh.id).toBe(old.id);
    const vote = await rig.send(
      rig.phone,
      'org.matrix.msc3381.poll.response',
      voteContent(old.pollId, approveOld),
    );
    expect((await rig.handledOf(vote)).kind).toBe('refused_vote');
    expect(rig.state(fresh.id)).toBe('pending');
    expect(rig.refusals(vote)).toEqual([expect.objectContaining({ reason: 'unknown_poll' })]);
  }, 30_000);
});

describe('attack: after a restart, a forged look-up of an old poll', () => {
  it('a vote on the poll of a request that no longer waits decides nothing, is answered so, and never counts for a new one', async () => {
    const old = await rig.post();
    const approveOld = await rig.answerId(old.pollId, 'approve');
    await rig.vote(rig.phone, old.pollId, 'deny').then((v) => rig.handledOf(v));
    expect(rig.state(old.id)).toBe('denied');
    await rig.restart();
    const fresh = await rig.post();
    // The homeserver serves the old poll's id as a clear-text request message of the
    // bot's naming the new request (it learnt the store id while the room was clear).
    rig.hs.lie.forge(old.pollId, {
      sender: BOT,
      type: 'm.room.message',
      content: {
        msgtype: 'm.text',
        body: `Request ${fresh.id}`,
        [REQUEST_ID_KEY]: fresh.id,
        [STORE_ID_KEY]: rig.core.store.storeId,
      },
    });
    // The phone votes "approve" on the old poll, as it read it.
    const vote = await rig.send(
      rig.phone,
      'org.matrix.msc3381.poll.response',
      voteContent(old.pollId, approveOld),
    );
    const h = await rig.handledOf(vote);
    expect(rig.state(fresh.id)).toBe('pending');
    expect(rig.active(fresh.id)).toEqual([]);
    expect(rig.state(old.id)).toBe('denied');
    expect(h.reply?.text).toContain(`Request ${old.id} was already decided`);
  }, 30_000);
});
