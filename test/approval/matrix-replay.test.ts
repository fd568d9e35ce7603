/**
 * Attack: the homeserver re-sends a message of the owner's phone. It holds every
 * ciphertext and can serve one again under any number of new event ids (with an edit
 * bundled, a relation rewritten, base64 padding added): each decrypts to the same words.
 * A decision-bearing message counts once, by its Megolm session and message index; a
 * repeat is refused (`replay`), told once, and never recorded as another decision.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eeRig, OWNER, textEdit, type E2eeRig } from '../../support/matrix.js';

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig();
}, 30_000);
afterAll(async () => {
  await rig.close();
});

const ciphertextOf = (eventId: string) => String(rig.hs.event(eventId)?.content['ciphertext']);

describe('attack: one old ciphertext of the phone re-sent under new event ids, each with an edit', () => {
  it('approves none of the later requests', async () => {
    const first = await rig.post();
    const status = await rig.say(rig.phone, 'status');
    expect((await rig.handledOf(status)).kind).toBe('text');
    for (let i = 0; i < 2; i += 1) {
      const later = await rig.post();
      const again = rig.hs.lie.resend(status);
      rig.hs.lie.bundleEdit(again, {
        sender: OWNER,
        type: 'm.room.message',
        content: textEdit(again, `approve ${later.id}`),
      });
      expect((await rig.handledOf(again)).kind).toBe('refused_replay');
      expect(rig.state(later.id)).toBe('pending');
    }
    expect(rig.state(first.id)).toBe('pending');
  });
});

describe('attack: a decision of the phone replayed', () => {
  it('a typed approve re-sent (as is, relation added) is refused each time and recorded once', async () => {
    const { id } = await rig.post();
    const approve = await rig.say(rig.phone, `approve ${id}`);
    await rig.handledOf(approve);
    expect(rig.state(id)).toBe('approved');
    const repeats = [
      rig.hs.lie.resend(approve),
      rig.hs.lie.resend(approve, {
        relatesTo: { 'm.in_reply_to': { event_id: approve } },
      }),
    ];
    for (const repeat of repeats) {
      expect((await rig.handledOf(repeat)).kind).toBe('refused_replay');
      expect(rig.refusals(repeat)).toEqual([
        expect.objectContaining({ reason: 'replay', request: id, first_event_id: approve }),
      ]);
    }
    expect(rig.decisions(id)).toHaveLength(1);
    const told = () =>
      rig
        .noticesSeenBy(rig.phone)
        .then((all) => all.filter((t) => t.includes(`request ${id} arrived again`)));
    await rig.settled();
    expect(await told()).toHaveLength(1);
  });

  it('a deny vote re-sent is refused, and no "already decided" decision is recorded for it', async () => {
    const { id, pollId } = await rig.post();
    const vote = await rig.vote(rig.phone, pollId, 'deny');
    await rig.handledOf(vote);
    expect(rig.state(id)).toBe('denied');
    const again = rig.hs.lie.resend(vote);
    expect((await rig.handledOf(again)).kind).toBe('refused_replay');
    expect(rig.decisions(id)).toHaveLength(1);
  });

  it('the same ciphertext with base64 padding added is the same message', async () => {
    // Padding can be added only where the unpadded length is not a multiple of 4; the
    // length follows the message's, so a few messages find one.
    let message: string | undefined;
    for (let k = 0; message === undefined && k < 4; k += 1) {
      const sent = await rig.send(rig.phone, 'm.room.message', {
        msgtype: 'm.text',
        body: 'status',
        'org.example.filler': 'x'.repeat(16 * k),
      });
      expect((await rig.handledOf(sent)).kind).toBe('text');
      if (ciphertextOf(sent).length % 4 !== 0) message = sent;
    }
    if (message === undefined) throw new Error('no message needed padding');
    const padding = '='.repeat(4 - (ciphertextOf(message).length % 4));
    const again = rig.hs.lie.resend(message, {
      rewrite: (c) => ({ ...c, ciphertext: `${String(c['ciphertext'])}${padding}` }),
    });
    expect(ciphertextOf(again)).not.toBe(ciphertextOf(message));
    expect((await rig.handledOf(again)).kind).toBe('refused_replay');
  });

  it('two messages of the phone with the same words are two messages', async () => {
    const a = await rig.post();
    const b = await rig.post();
    const first = await rig.say(rig.phone, `deny ${a.id}`);
    await rig.handledOf(first);
    const second = await rig.say(rig.phone, `deny ${b.id}`);
    expect((await rig.handledOf(second)).kind).toBe('text');
    const status = [await rig.say(rig.phone, 'status'), await rig.say(rig.phone, 'status')];
    for (const s of status) expect((await rig.handledOf(s)).kind).toBe('text');
    expect(rig.state(a.id)).toBe('denied');
    expect(rig.state(b.id)).toBe('denied');
  });
});
