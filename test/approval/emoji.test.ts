import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { normaliseEmoji, reactionCommand, REACTION_KEYS } from '../../broker/approval/emoji.js';

describe('normaliseEmoji', () => {
  it('removes presentation selectors and skin tones, nothing else', () => {
    expect(normaliseEmoji('👍\uFE0F')).toBe('👍');
    expect(normaliseEmoji('👍\uFE0E')).toBe('👍');
    expect(normaliseEmoji('👍🏽')).toBe('👍');
    expect(normaliseEmoji('👍🏻\uFE0F')).toBe('👍');
    expect(normaliseEmoji('👎🏿')).toBe('👎');
    expect(normaliseEmoji('👍\u200D🔥')).toBe('👍\u200D🔥');
    expect(normaliseEmoji(' 👍')).toBe(' 👍');
  });
});

describe('reactionCommand: the allow-list', () => {
  it('maps the four reactions', () => {
    expect(reactionCommand('👍', 3)).toEqual({ kind: 'approve', request: 3 });
    expect(reactionCommand('👎', 3)).toEqual({ kind: 'deny', request: 3 });
    expect(reactionCommand('🛇', 3)).toEqual({ kind: 'revoke', target: { request: 3 } });
    expect(reactionCommand('📋', 3)).toEqual({ kind: 'status' });
    expect(REACTION_KEYS).toEqual(['👍', '👎', '🛇', '📋']);
  });

  it.each(['👍🏽', '👍️', '👍︎', '👍🏻️', '👍🏿'])('accepts the variant %j of 👍', (key) => {
    expect(reactionCommand(key, 7)).toEqual({ kind: 'approve', request: 7 });
  });

  it.each(['👎🏽', '👎️', '👎🏻'])('accepts the variant %j of 👎', (key) => {
    expect(reactionCommand(key, 7)).toEqual({ kind: 'deny', request: 7 });
  });
});

describe('attack: look-alike and composite reactions are refused', () => {
  it.each([
    ['✋', 'raised hand'],
    ['👌', 'OK hand'],
    ['🖒', 'reversed thumbs up'],
    ['👆', 'pointing up'],
    ['✅', 'check mark'],
    ['⛔', 'no entry (not 🛇)'],
    ['🚫', 'prohibited (not 🛇)'],
    ['👍\u200D🔥', 'ZWJ sequence starting with 👍'],
    ['\u200D👍', 'ZWJ before 👍'],
    ['👍👍', 'two thumbs'],
    ['👍 ', 'trailing space'],
    ['\u200B👍', 'zero-width space'],
    ['👍\u202E', 'bidi override'],
    ['👍\u{E0067}', 'tag character'],
    [':+1:', 'shortcode'],
    ['+1', 'text'],
    ['approve', 'a word'],
    ['', 'empty'],
    ['\uFE0F', 'a lone selector'],
    ['🏽', 'a lone skin tone'],
  ])('%j (%s)', (key) => {
    expect(reactionCommand(key, 3)).toBeNull();
  });

  it('refuses request ids that cannot name a request', () => {
    for (const id of [0, -1, 1.5, Number.NaN, Infinity, Number.MAX_SAFE_INTEGER + 1]) {
      expect(reactionCommand('👍', id)).toBeNull();
    }
  });

  it('refuses a non-string key', () => {
    expect(reactionCommand(undefined as unknown as string, 3)).toBeNull();
  });

  it('property: a key is accepted only if it is an allow-listed emoji plus selectors/skin tones', () => {
    const noise = fc.constantFrom('\uFE0E', '\uFE0F', '🏻', '🏼', '🏽', '🏾', '🏿');
    const anything = fc.string({ unit: 'grapheme', maxLength: 3 });
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom(...REACTION_KEYS), noise, anything), { maxLength: 4 }),
        (parts) => {
          const key = parts.join('');
          const cmd = reactionCommand(key, 1);
          const stripped = key.replace(/\uFE0E|\uFE0F|[\u{1F3FB}-\u{1F3FF}]/gu, '');
          expect(cmd !== null).toBe(REACTION_KEYS.includes(stripped));
        },
      ),
      { numRuns: 3000 },
    );
  });
});
