/**
 * Attack: a secret written out of shape to slip past the secret check — in hex (either
 * case), in another letter case, reversed, or with whitespace between its characters.
 * Every spelling listed here, of any secret a config accepts, is held (so a tool call
 * carrying it is refused) and scrubbed (so no output carries it).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSecretGuard } from '../../broker/base/scrub.js';

const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');
const reversed = (s: string): string => [...s].reverse().join('');

/** Every spelling the check promises to catch (SECURITY.md, "secrets"). */
const SPELLINGS: Record<string, (s: string, user: string) => string> = {
  raw: (s) => s,
  'URL-encoded': (s) => encodeURIComponent(s),
  'URL-encoded, lower-case hex': (s) =>
    encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  'form-encoded': (s) => new URLSearchParams({ s }).toString().slice(2),
  base64: (s) => Buffer.from(s).toString('base64'),
  base64url: (s) => Buffer.from(s).toString('base64url'),
  'JSON-escaped': (s) => JSON.stringify(s).slice(1, -1),
  'user:password in base64': (s, user) => Buffer.from(`${user}:${s}`).toString('base64'),
  hex,
  'upper-case hex': (s) => hex(s).toUpperCase(),
  'upper case': (s) => s.toUpperCase(),
  'lower case': (s) => s.toLowerCase(),
  reversed,
  'reversed, upper case': (s) => reversed(s).toUpperCase(),
  'split by spaces': (s) => [...s].join(' '),
  'hex split by spaces': (s) => (hex(s).match(/../g) ?? []).join(' '),
};

/** Secrets as the config accepts them: at least 16 printable ASCII characters. */
const secret = fc.string({
  unit: fc.constantFrom(...'abcXYZ0189-_.~+/=@:%!'),
  minLength: 16,
  maxLength: 48,
});
const text = fc.string({ maxLength: 20 });

describe('a secret in hex, upper case, reversed or split by spaces', () => {
  const SECRET = 'Tok-3f9a-QmZx-77Lp-w0rd';
  const guard = createSecretGuard([SECRET], [['alice', SECRET]]);
  it.each(Object.entries(SPELLINGS))('%s is held and scrubbed', (_, spell) => {
    const planted = spell(SECRET, 'alice');
    expect(guard.holds(`see ${planted} here`)).toBe(true);
    expect(guard.scrub(`see ${planted} here`)).toBe('see [redacted] here');
  });

  it('mixed case and any whitespace between characters are held too', () => {
    expect(guard.holds('tOK-3F9A-qMzX-77lP-W0RD')).toBe(true);
    expect(guard.holds([...SECRET].join('\t\n '))).toBe(true);
    expect(guard.holds(`${SECRET.slice(0, 10)}\u00a0${SECRET.slice(10)}`)).toBe(true);
  });

  it('a secret of only whitespace matches its own spellings, never every text', () => {
    const blank = createSecretGuard([' '.repeat(16)]);
    expect(blank.holds('clean text')).toBe(false);
    expect(blank.scrub('clean text')).toBe('clean text');
    expect(blank.holds(`a${' '.repeat(16)}b`)).toBe(true);
  });

  it('text that merely shares characters with the secret is left alone', () => {
    const clean = 'Tok-3f9a is a ticket; w0rd-pL77 too';
    expect(guard.holds(clean)).toBe(false);
    expect(guard.scrub(clean)).toBe(clean);
  });
});

describe('property: every listed spelling of any secret is held and scrubbed', () => {
  it('for any secret, spelling and surrounding text', () => {
    fc.assert(
      fc.property(
        secret,
        fc.constantFrom(...Object.keys(SPELLINGS)),
        text,
        text,
        fc.array(fc.constantFrom(' ', '\t', '\n', '\u00a0'), { maxLength: 3 }),
        (s, how, before, after, gaps) => {
          const guard = createSecretGuard([s], [['alice', s]]);
          let planted = (SPELLINGS[how] as (s: string, u: string) => string)(s, 'alice');
          // Whitespace anywhere inside a raw, reversed or hex spelling changes nothing.
          if (['raw', 'hex', 'reversed', 'upper case'].includes(how) && gaps.length > 0) {
            const at = 1 + (before.length % (planted.length - 1));
            planted = `${planted.slice(0, at)}${gaps.join('')}${planted.slice(at)}`;
          }
          const input = `${before}${planted}${after}`;
          expect(guard.holds(input)).toBe(true);
          const out = guard.scrub(input);
          expect(out).not.toContain(planted);
          expect(out).not.toContain(s);
        },
      ),
      { numRuns: 500 },
    );
  });
});
