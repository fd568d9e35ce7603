import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createScrubber } from '../../broker/base/scrub.js';

const SECRET = 'Xk9pQ-r7TzW-2bLmN-aa+/=-zz%20';
const USER = 'alice';

/** The forms the task names, computed here independently of the implementation. */
function namedForms(secret: string, user?: string): string[] {
  const forms = [
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ x: secret }).toString().slice(2),
    Buffer.from(secret).toString('base64'),
  ];
  if (user !== undefined) {
    const pair = `${user}:${secret}`;
    forms.push(
      pair,
      Buffer.from(pair).toString('base64'),
      `Basic ${Buffer.from(pair).toString('base64')}`,
    );
  }
  return forms.filter((f) => f !== '');
}

describe('scrubber: secret leaks in error text', () => {
  const scrub = createScrubber([SECRET], [[USER, SECRET]]);

  it.each(namedForms(SECRET, USER).map((f) => [f]))('removes the form %s', (form) => {
    const out = scrub(`server said: ${form} (end)`);
    expect(out).not.toContain(form);
    expect(out).toContain('server said: ');
    expect(out).toContain(' (end)');
  });

  it('removes an echoed Authorization header and leaves the rest', () => {
    const basic = Buffer.from(`${USER}:${SECRET}`).toString('base64');
    const out = scrub(`<s:message>Authorization: Basic ${basic}; password=${SECRET}</s:message>`);
    expect(out).toBe('<s:message>Authorization: Basic [redacted]; password=[redacted]</s:message>');
  });

  it('removes lowercase percent-encoding (Nextcloud hrefs use %c3%a9)', () => {
    const secret = 'pässwörd/xyz';
    const s = createScrubber([secret]);
    const lower = encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    expect(s(`href=${lower}`)).toBe('href=[redacted]');
  });

  it('removes the JSON-escaped form (log lines are serialised before scrubbing)', () => {
    const secret = 'a"b\\c-secret';
    const s = createScrubber([secret]);
    const line = JSON.stringify({ msg: `x ${secret} y` });
    expect(s(line)).not.toContain(JSON.stringify(secret).slice(1, -1));
    expect(s(line)).toBe(JSON.stringify({ msg: 'x [redacted] y' }));
  });

  it('removes base64 of the secret embedded in a longer buffer at any alignment', () => {
    const s = createScrubber([SECRET]);
    for (const pre of ['', 'a', 'ab', 'abc']) {
      const encoded = Buffer.from(`${pre}${SECRET}tail`).toString('base64');
      const decoded = Buffer.from(s(encoded).replace(/\[redacted\]/g, ''), 'base64').toString(
        'latin1',
      );
      expect(decoded).not.toContain(SECRET);
    }
  });

  it('ignores empty secrets and leaves clean text alone', () => {
    const s = createScrubber(['', SECRET], [['bob', '']]);
    expect(s('nothing secret here: bob')).toBe('nothing secret here: bob');
    expect(createScrubber([''])('abc')).toBe('abc');
  });

  it('replaces longest first: the user:password form does not leave the user behind', () => {
    const s = createScrubber([SECRET], [[USER, SECRET]]);
    expect(s(`cred ${USER}:${SECRET}!`)).toBe('cred [redacted]!');
  });

  it('never lets a secret made of marker characters through', () => {
    for (const secret of ['d][r', 'red', 'd', ']']) {
      const s = createScrubber([secret]);
      const text = `${secret}${secret} [redacted] ${secret}`;
      expect(s(text)).not.toContain(secret);
    }
  });
});

describe('scrubber properties', () => {
  const secretArb = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
  const textArb = fc.string({ unit: 'grapheme', maxLength: 40 });

  it('scrub(text with a secret in any named form) contains none of the forms', () => {
    fc.assert(
      fc.property(
        secretArb,
        fc.stringMatching(/^[a-z0-9._-]{1,12}$/),
        textArb,
        textArb,
        fc.nat(),
        (secret, user, before, after, pick) => {
          const forms = namedForms(secret, user);
          const form = forms[pick % forms.length] as string;
          const s = createScrubber([secret], [[user, secret]]);
          const out = s(`${before}${form}${after}`);
          // The user name alone is not a secret; every secret-bearing form is gone.
          for (const f of forms) if (f !== user) expect(out).not.toContain(f);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('scrub leaves text without any secret form unchanged', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{12,30}$/), textArb, (secret, text) => {
        const s = createScrubber([secret]);
        fc.pre(!text.includes('[redacted]'));
        fc.pre(![secret, Buffer.from(secret).toString('base64')].some((f) => text.includes(f)));
        // Short base64 cores of the secret could match by chance; random alphanumerics of
        // 12+ characters make that vanishingly rare, and the property checks it.
        expect(s(text)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('scrub is idempotent', () => {
    fc.assert(
      fc.property(secretArb, textArb, (secret, text) => {
        const s = createScrubber([secret]);
        const once = s(`${text}${secret}${text}`);
        expect(s(once)).toBe(once);
      }),
    );
  });
});
