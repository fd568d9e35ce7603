/**
 * classify() and stripReplyFallback(): the pure part of the Matrix gateway, with
 * property tests for its invariants (only the approver, only the room, quotes never
 * parsed) and unit tests for the bounded memory of handled events.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedSet } from '../../broker/approval/matrix/bounded-set.js';
import {
  classify,
  stripReplyFallback,
  type IncomingEvent,
} from '../../broker/approval/matrix/classify.js';

const ctx = { roomId: '!room:hs', approver: '@owner:hs', bot: '@bot:hs' };

const base = (over: Partial<IncomingEvent>): IncomingEvent => ({
  eventId: '$e',
  roomId: ctx.roomId,
  sender: ctx.approver,
  type: 'm.room.message',
  content: { msgtype: 'm.text', body: 'approve 1' },
  ...over,
});

const reaction = (key: string, rel_type = 'm.annotation') => ({
  'm.relates_to': { rel_type, event_id: '$target', key },
});

const anyEvent = fc.record({
  eventId: fc.string({ minLength: 1 }),
  roomId: fc.option(fc.constantFrom(ctx.roomId, '!other:hs', ''), { nil: undefined }),
  sender: fc.option(fc.constantFrom(ctx.approver, ctx.bot, '@eve:hs', '@owner:evil', 'owner'), {
    nil: undefined,
  }),
  type: fc.constantFrom('m.room.message', 'm.reaction', 'm.room.redaction', 'm.sticker'),
  content: fc.oneof(
    fc.constant({ msgtype: 'm.text', body: 'approve 1' }),
    fc.constant(reaction('👍')),
    fc.constant({ redacts: '$x' }),
    fc.anything(),
  ),
  redacts: fc.option(fc.constant('$x'), { nil: undefined }),
});

describe('classify: only the approver acts', () => {
  it('property: an event from anyone but the approver is never an action', () => {
    fc.assert(
      fc.property(anyEvent, (ev) => {
        const c = classify(ev, ctx);
        if (ev.sender !== ctx.approver) {
          expect(['reaction', 'text', 'redaction']).not.toContain(c.kind);
        }
      }),
    );
  });

  it('property: an event outside the configured room is always ignored', () => {
    fc.assert(
      fc.property(anyEvent, (ev) => {
        fc.pre(ev.roomId !== ctx.roomId);
        expect(classify(ev, ctx)).toEqual({ kind: 'ignore', why: 'other_room' });
      }),
    );
  });

  it('the bot itself is ignored, even with command text', () => {
    expect(classify(base({ sender: ctx.bot }), ctx)).toEqual({ kind: 'ignore', why: 'own_event' });
  });

  it('a stranger is reported, marked command-like only for commands and allow-listed emoji', () => {
    expect(classify(base({ sender: '@eve:hs' }), ctx)).toMatchObject({
      kind: 'stranger',
      what: 'text',
      commandLike: true,
    });
    expect(
      classify(base({ sender: '@eve:hs', content: { msgtype: 'm.text', body: 'hi' } }), ctx),
    ).toMatchObject({ kind: 'stranger', commandLike: false });
    expect(
      classify(base({ sender: '@eve:hs', type: 'm.reaction', content: reaction('👍🏿') }), ctx),
    ).toMatchObject({ kind: 'stranger', what: 'reaction', commandLike: true });
    expect(
      classify(base({ sender: '@eve:hs', type: 'm.reaction', content: reaction('🎉') }), ctx),
    ).toMatchObject({ kind: 'stranger', commandLike: false });
  });
});

describe('classify: what the approver sends', () => {
  it('a reaction annotation names its target and key', () => {
    expect(classify(base({ type: 'm.reaction', content: reaction('👍') }), ctx)).toEqual({
      kind: 'reaction',
      target: '$target',
      key: '👍',
    });
  });

  it('a reaction with another rel_type, or malformed, is ignored', () => {
    expect(
      classify(base({ type: 'm.reaction', content: reaction('👍', 'm.reference') }), ctx),
    ).toMatchObject({ kind: 'ignore', why: 'not_annotation' });
    expect(classify(base({ type: 'm.reaction', content: { key: '👍' } }), ctx)).toMatchObject({
      kind: 'ignore',
      why: 'malformed',
    });
    expect(
      classify(base({ type: 'm.reaction', content: reaction('👍'.repeat(65)) }), ctx),
    ).toMatchObject({ kind: 'ignore', why: 'malformed' });
  });

  it("the approver's edits are reported as edits (by rel_type or m.new_content), with what they would say", () => {
    const edit = {
      msgtype: 'm.text',
      body: '* approve 1',
      'm.new_content': { msgtype: 'm.text', body: 'approve 1' },
      'm.relates_to': { rel_type: 'm.replace', event_id: '$orig' },
    };
    const asEdit = { kind: 'edit', commandLike: true, request: 1 };
    expect(classify(base({ content: edit }), ctx)).toEqual(asEdit);
    const { 'm.relates_to': _omit, ...onlyNewContent } = edit;
    expect(classify(base({ content: onlyNewContent }), ctx)).toEqual(asEdit);
    // Without m.new_content its fallback body says what it would say.
    const { 'm.new_content': _new, ...onlyRelation } = edit;
    expect(classify(base({ content: onlyRelation }), ctx)).toEqual(asEdit);
    const chatter = { ...edit, 'm.new_content': { msgtype: 'm.text', body: 'thanks' } };
    expect(classify(base({ content: chatter }), ctx)).toMatchObject({ commandLike: false });
    expect(classify(base({ content: edit, sender: '@eve:hs' }), ctx)).toEqual({
      kind: 'ignore',
      why: 'edit',
    });
  });

  it("attack: in an encrypted room the relation may be the homeserver's: only m.new_content makes an edit", () => {
    const encrypted = { ...ctx, relationsFromServer: true };
    // The owner's own "approve 1", with an m.replace relation the homeserver added in clear
    // (copied into a payload that had none): still the owner's words.
    const dressed = {
      msgtype: 'm.text',
      body: 'approve 1',
      'm.relates_to': { rel_type: 'm.replace', event_id: '$other' },
    };
    expect(classify(base({ content: dressed }), encrypted)).toEqual({
      kind: 'text',
      body: 'approve 1',
    });
    const realEdit = { ...dressed, 'm.new_content': { msgtype: 'm.text', body: 'deny 1' } };
    expect(classify(base({ content: realEdit }), encrypted)).toMatchObject({ kind: 'edit' });
    const editedVote = {
      'm.new_content': {},
      'm.relates_to': { rel_type: 'm.reference', event_id: '$poll' },
      'org.matrix.msc3381.poll.response': { answers: ['approve-1-' + 'a'.repeat(32)] },
    };
    expect(
      classify(base({ type: 'org.matrix.msc3381.poll.response', content: editedVote }), encrypted),
    ).toEqual({ kind: 'edit', commandLike: true, request: undefined });
  });

  it('only m.text counts; a missing or non-string body is malformed', () => {
    for (const msgtype of ['m.notice', 'm.emote', 'm.image']) {
      expect(classify(base({ content: { msgtype, body: 'approve 1' } }), ctx)).toMatchObject({
        kind: 'ignore',
        why: 'not_text',
      });
    }
    expect(classify(base({ content: { msgtype: 'm.text' } }), ctx)).toMatchObject({
      why: 'malformed',
    });
    expect(classify(base({ content: { msgtype: 'm.text', body: 7 } }), ctx)).toMatchObject({
      why: 'malformed',
    });
    expect(classify(base({ content: null }), ctx)).toMatchObject({ why: 'malformed' });
  });

  it('a redaction names its target, from the top level or the content', () => {
    expect(classify(base({ type: 'm.room.redaction', content: {}, redacts: '$r' }), ctx)).toEqual({
      kind: 'redaction',
      target: '$r',
    });
    expect(classify(base({ type: 'm.room.redaction', content: { redacts: '$r2' } }), ctx)).toEqual({
      kind: 'redaction',
      target: '$r2',
    });
    expect(classify(base({ type: 'm.room.redaction', content: {} }), ctx)).toMatchObject({
      why: 'malformed',
    });
  });

  it('membership and room-state changes are reported for anyone, by state key', () => {
    expect(
      classify(
        base({
          sender: '@eve:hs',
          type: 'm.room.member',
          stateKey: '@mallory:hs',
          content: { membership: 'join' },
        }),
        ctx,
      ),
    ).toEqual({ kind: 'membership', userId: '@mallory:hs', membership: 'join' });
    expect(
      classify(
        base({
          sender: '@eve:hs',
          type: 'm.room.join_rules',
          stateKey: '',
          content: { join_rule: 'public' },
        }),
        ctx,
      ),
    ).toMatchObject({ kind: 'room_state', stateType: 'm.room.join_rules' });
    expect(
      classify(base({ type: 'm.room.join_rules', stateKey: 'x', content: {} }), ctx),
    ).toMatchObject({ kind: 'ignore' });
  });
});

describe('stripReplyFallback', () => {
  it('removes the quote and the blank line after it', () => {
    expect(stripReplyFallback('> <@eve:hs> approve 1\n> more\n\ndeny 1')).toBe('deny 1');
  });

  it('leaves a message without a quote alone', () => {
    expect(stripReplyFallback('approve 1')).toBe('approve 1');
    expect(stripReplyFallback('approve 1\n> not a fallback')).toBe('approve 1\n> not a fallback');
  });

  it('a message that is only a quote becomes empty', () => {
    expect(stripReplyFallback('> <@eve:hs> approve 1')).toBe('');
  });

  it('property: quoted lines never survive, and the text after the quote is kept exactly', () => {
    const line = fc.string().filter((s) => !s.includes('\n'));
    const reply = fc.string().filter((s) => !s.startsWith('>') && !s.startsWith('\n'));
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 5 }), reply, (quoted, text) => {
        const body = `${quoted.map((q) => `> ${q}`).join('\n')}\n\n${text}`;
        expect(stripReplyFallback(body)).toBe(text);
      }),
    );
  });
});

describe('BoundedSet', () => {
  it('reports a repeat, and forgets the oldest beyond its limit', () => {
    const s = new BoundedSet(2);
    expect(s.add('a')).toBe(true);
    expect(s.add('a')).toBe(false);
    s.add('b');
    s.add('c');
    expect(s.has('a')).toBe(false);
    expect(s.has('b') && s.has('c')).toBe(true);
    expect(s.size).toBe(2);
  });

  it('refuses a useless limit', () => {
    expect(() => new BoundedSet(0)).toThrow(RangeError);
  });
});
