/**
 * The one-time code of `broker pair` (broker/approval/pairing/code.ts): 50 random bits,
 * read forgivingly from a phone keyboard, never confused with another code, and a
 * `pair CODE` message told apart from every other text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPairCode,
  groupedKey,
  isPairCode,
  newPairCode,
  pairMessageCode,
} from '../../broker/approval/pairing/code.js';

const bytes = fc.uint8Array({ minLength: 10, maxLength: 10 });
const fixed = (b: Uint8Array) => () => b;

describe('a new code', () => {
  it('is xxxxx-xxxxx in Crockford base32, and carries at least 40 bits', () => {
    const code = newPairCode(fixed(new Uint8Array(10).fill(255)));
    expect(code).toBe('zzzzz-zzzzz');
    // 10 characters from 32: 50 bits; every byte value gives a character.
    fc.assert(
      fc.property(bytes, (b) => {
        const c = newPairCode(fixed(b));
        expect(c).toMatch(/^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/);
        expect(canonicalPairCode(c)).toBe(c.replace('-', ''));
      }),
    );
  });

  it('differs for different random bytes (no two byte strings share a code modulo 32)', () => {
    fc.assert(
      fc.property(bytes, bytes, (a, b) => {
        const same = [...a].every((x, i) => (x & 31) === ((b[i] ?? 0) & 31));
        expect(newPairCode(fixed(a)) === newPairCode(fixed(b))).toBe(same);
      }),
    );
  });
});

describe('a typed code', () => {
  it('matches in any case, with spaces or dashes, and i/l/o for 1/1/0', () => {
    const code = '01abc-defgh';
    for (const typed of [
      '01abcdefgh',
      '01ABC-DEFGH',
      '01abc defgh',
      ' 0 1 a b c - d e f g h',
      'olabc-defgh',
      'OIabc-defgh',
    ]) {
      expect(isPairCode(typed, code), typed).toBe(true);
    }
  });

  it('never matches another code, nor a prefix, nor one character more', () => {
    fc.assert(
      fc.property(bytes, bytes, (a, b) => {
        const one = newPairCode(fixed(a));
        const two = newPairCode(fixed(b));
        expect(isPairCode(two, one)).toBe(one === two);
      }),
    );
    expect(isPairCode('01abc-defg', '01abc-defgh')).toBe(false);
    expect(isPairCode('01abc-defghh', '01abc-defgh')).toBe(false);
    expect(isPairCode('', '01abc-defgh')).toBe(false);
    expect(isPairCode('01abc-defgu', '01abc-defgu')).toBe(false);
  });
});

describe('a `pair CODE` message', () => {
  it('is "pair" and one code, in any case', () => {
    expect(pairMessageCode('pair 01abc-defgh')).toBe('01abc-defgh');
    expect(pairMessageCode('  PAIR  01ABC DEFGH ')).toBe('01ABC DEFGH');
  });

  it('is nothing else: chatter, a command, a second line, a look-alike', () => {
    for (const text of [
      'pair',
      'pair ',
      'repair 01abc-defgh',
      'approve 3',
      'pair 01abc-defgh\napprove 3',
      'pаir 01abc-defgh', // Cyrillic а
      `pair ${'x'.repeat(60)}`,
    ]) {
      expect(pairMessageCode(text), text).toBeUndefined();
    }
  });
});

describe('a session key', () => {
  it('is shown in groups of four, as Element shows it', () => {
    expect(groupedKey('3sbpG34KF2+42DHWuubqkFUbSzrHuCawDWjFmSc5g5k')).toBe(
      '3sbp G34K F2+4 2DHW uubq kFUb SzrH uCaw DWjF mSc5 g5k',
    );
  });
});
