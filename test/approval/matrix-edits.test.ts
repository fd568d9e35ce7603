/**
 * Attack: turning the owner's words into other words with an edit, in an encrypted
 * room (`matrix.encryption: required`). matrix-js-sdk replaces an event's content with
 * its latest edit (a replacement the server bundles in `unsigned`, unsigned and
 * unencrypted, or a timeline edit from any session of the same account); the bot
 * decides only on what the pinned phone encrypted in that message. The phone and the
 * agent's session of the owner's account are real matrix-js-sdk clients with Rust
 * crypto; the homeserver is the fake, lying where a suite says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eeRig, OWNER, textEdit, voteContent, type E2eeRig } from '../../support/matrix.js';

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig();
}, 30_000);
afterAll(async () => {
  await rig.close();
});

/** A clear-text edit made by the homeserver in the owner's name. */
const forgedEdit = (target: string, body: string) => ({
  sender: OWNER,
  type: 'm.room.message',
  content: textEdit(target, body),
});

describe('attack: the homeserver bundles an edit "approve N" into unsigned of the phone\'s message', () => {
  it.each([
    ['the phone\'s "deny N"', (n: number) => `deny ${n}`, 'denied'],
    ['"status"', () => 'status', 'pending'],
    ['"thanks, looking" (chatter)', () => 'thanks, looking', 'pending'],
  ])('onto %s: request N is not approved', async (_what, text, state) => {
    const { id } = await rig.post();
    const eventId = await rig.dressed(
      () => rig.say(rig.phone, text(id)),
      (target) => rig.hs.lie.bundleEdit(target, forgedEdit(target, `approve ${id}`)),
    );
    await rig.handledOf(eventId);
    expect(rig.active(id)).toEqual([]);
    expect(rig.state(id)).toBe(state);
  });

  it('onto a deny vote: the vote denies', async () => {
    const { id, pollId } = await rig.post();
    // The strongest such server: it even knows the approving answer's id.
    const approving = voteContent(pollId, await rig.answerId(pollId, 'approve'));
    const voteId = await rig.dressed(
      () => rig.vote(rig.phone, pollId, 'deny'),
      (target) =>
        rig.hs.lie.bundleEdit(target, {
          sender: OWNER,
          type: 'org.matrix.msc3381.poll.response',
          content: {
            'm.new_content': approving,
            'm.relates_to': { rel_type: 'm.replace', event_id: target },
          },
        }),
    );
    await rig.handledOf(voteId);
    expect(rig.state(id)).toBe('denied');
    expect(rig.active(id)).toEqual([]);
  });
});

describe("attack: the agent's session of the owner's account edits the owner's decision", () => {
  it('an edit after the decision does not undo it', async () => {
    const { id } = await rig.post();
    const approve = await rig.say(rig.phone, `approve ${id}`);
    expect((await rig.handledOf(approve)).kind).toBe('text');
    const edit = await rig.send(rig.laptop, 'm.room.message', textEdit(approve, `revoke ${id}`));
    await rig.handledOf(edit);
    expect(rig.active(id)).toHaveLength(1);
    expect(rig.state(id)).toBe('approved');
  });

  it('an edit the bot sees before the message does not change what the message said', async () => {
    const { id } = await rig.post();
    // The homeserver holds the phone's "approve N" back until the agent's edit of it
    // ("deny N") has reached the bot, then delivers it.
    const stored = rig.hs.lie.nextSend(OWNER, { withhold: true });
    await rig.say(rig.phone, `approve ${id}`);
    const approve = await stored;
    const edit = await rig.send(rig.laptop, 'm.room.message', textEdit(approve, `deny ${id}`));
    await rig.handledOf(edit);
    rig.hs.lie.release(approve);
    await rig.handledOf(approve);
    expect(rig.state(id)).toBe('approved');
    expect(rig.active(id)).toHaveLength(1);
  });

  it("with an honest, Synapse-like server: the edit bundled into the owner's deny after a sync gap", async () => {
    const { id } = await rig.post();
    const release = rig.hs.holdSync(rig.config().bot_user);
    for (let i = 0; i < 12; i += 1) await rig.say(rig.phone, `reading the request, ${i}`);
    const deny = await rig.say(rig.phone, `deny ${id}`);
    const edit = await rig.send(rig.laptop, 'm.room.message', textEdit(deny, `approve ${id}`));
    release();
    await rig.handledOf(edit);
    await rig.handledOf(deny);
    expect(rig.state(id)).toBe('denied');
    expect(rig.active(id)).toEqual([]);
  });
});

describe('an edit decides nothing', () => {
  it("the phone's own edit into a command is refused (edited), audited, and told once", async () => {
    const { id } = await rig.post();
    const chatter = await rig.say(rig.phone, 'let me look at this first');
    const edits = [
      await rig.send(rig.phone, 'm.room.message', textEdit(chatter, `approve ${id}`)),
      await rig.send(rig.phone, 'm.room.message', textEdit(chatter, `approve ${id} 1`)),
    ];
    for (const edit of edits) {
      await rig.handledOf(edit);
      expect(rig.refusals(edit)).toEqual([
        expect.objectContaining({ reason: 'edited', request: id, actor: OWNER }),
      ]);
    }
    expect(rig.state(id)).toBe('pending');
    await rig.settled();
    const told = (await rig.noticesSeenBy(rig.phone)).filter(
      (t) => t.includes(`request ${id}`) && t.startsWith('Edits decide nothing'),
    );
    expect(told).toHaveLength(1);
  });

  it("the phone's edit of its own approval does not undo it", async () => {
    const { id } = await rig.post();
    const approve = await rig.say(rig.phone, `approve ${id}`);
    await rig.handledOf(approve);
    const edit = await rig.send(rig.phone, 'm.room.message', textEdit(approve, `deny ${id}`));
    await rig.handledOf(edit);
    expect(rig.state(id)).toBe('approved');
    expect(rig.refusals(edit)).toEqual([expect.objectContaining({ reason: 'edited' })]);
  });
});
