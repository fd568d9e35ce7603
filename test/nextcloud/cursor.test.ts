import { createHmac, hkdfSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../broker/nextcloud/cursor.js';
import { NextcloudError } from '../../broker/nextcloud/errors.js';

const PASSWORD = 'app-password-0123456789';

function badCursor(run: () => unknown): void {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(NextcloudError);
    expect((err as NextcloudError).code).toBe('bad_cursor');
    expect((err as NextcloudError).retry).toBe(false);
    return;
  }
  throw new Error('expected bad_cursor');
}

describe('list cursors', () => {
  const codec = createCursorCodec('home', PASSWORD);

  it('round-trips an offset for the same instance and path', () => {
    const c = codec.encode('Docs/Reports', 400);
    expect(codec.decode(c, 'Docs/Reports')).toBe(400);
  });

  it('survives a restart (same password, new codec)', () => {
    const c = codec.encode('Docs', 200);
    expect(createCursorCodec('home', PASSWORD).decode(c, 'Docs')).toBe(200);
  });

  it('carries no secret', () => {
    const c = codec.encode('Docs', 200);
    expect(c).not.toContain(PASSWORD);
    expect(Buffer.from(c.split('.')[0] ?? '', 'base64url').toString()).toBe(
      '{"v":1,"i":"home","p":"Docs","o":200}',
    );
  });
});

describe('search cursors', () => {
  const codec = createCursorCodec('home', PASSWORD);

  it('round-trip for the same folder and term, and name the term', () => {
    const c = codec.encode('Docs', 100, 'report');
    expect(codec.decode(c, 'Docs', 'report')).toBe(100);
    expect(Buffer.from(c.split('.')[0] ?? '', 'base64url').toString()).toBe(
      '{"v":1,"i":"home","p":"Docs","q":"report","o":100}',
    );
  });

  it('a search cursor replayed with another term, or as a list cursor, is refused', () => {
    const c = codec.encode('Docs', 100, 'report');
    badCursor(() => codec.decode(c, 'Docs', 'Report'));
    badCursor(() => codec.decode(c, 'Docs', 'report '));
    badCursor(() => codec.decode(c, 'Docs'));
    badCursor(() => codec.decode(c, 'Other', 'report'));
  });

  it('a list cursor is refused for a search of the same folder', () => {
    badCursor(() => codec.decode(codec.encode('Docs', 200), 'Docs', 'report'));
  });
});

describe('cursor forgery and replay attacks', () => {
  const codec = createCursorCodec('home', PASSWORD);
  const good = codec.encode('Docs', 200);

  it('refuses a cursor for another path', () => {
    badCursor(() => codec.decode(good, 'Private'));
    badCursor(() => codec.decode(good, 'Docs/Sub'));
  });

  it('refuses a cursor for another instance (same password)', () => {
    badCursor(() => createCursorCodec('work', PASSWORD).decode(good, 'Docs'));
  });

  it('refuses a cursor signed with another app password (forgery)', () => {
    badCursor(() => createCursorCodec('home', 'other-password').decode(good, 'Docs'));
  });

  it('refuses an edited payload with the old signature', () => {
    const [, mac] = good.split('.');
    const forged = Buffer.from(JSON.stringify({ v: 1, i: 'home', p: 'Private', o: 0 })).toString(
      'base64url',
    );
    badCursor(() => codec.decode(`${forged}.${mac}`, 'Private'));
  });

  it.each([
    ['empty', ''],
    ['no signature', 'abc'],
    ['a short signature', 'abc.def'],
    ['an oversized cursor', `${'a'.repeat(2000)}.${'b'.repeat(43)}`],
    ['padding characters', `${good}=`],
  ])('refuses %s', (_name, cursor) => {
    badCursor(() => codec.decode(cursor, 'Docs'));
  });

  it.each([
    ['another version', { v: 2, i: 'home', p: 'Docs', o: 0 }],
    ['a negative offset', { v: 1, i: 'home', p: 'Docs', o: -1 }],
    ['a fractional offset', { v: 1, i: 'home', p: 'Docs', o: 1.5 }],
    ['an extra key', { v: 1, i: 'home', p: 'Docs', o: 0, x: 1 }],
    ['a string offset', { v: 1, i: 'home', p: 'Docs', o: '0' }],
  ])('refuses a correctly signed payload with %s', (_name, payload) => {
    // Sign as the broker does (same key derivation), to reach the schema check.
    const key = Buffer.from(
      hkdfSync('sha256', PASSWORD, 'instance:home', 'nextcloud-broker list cursor v1', 32),
    );
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const mac = createHmac('sha256', key).update(body).digest('base64url');
    badCursor(() => codec.decode(`${body}.${mac}`, 'Docs'));
  });

  it('a correctly signed payload is accepted (the signing above matches the codec)', () => {
    const key = Buffer.from(
      hkdfSync('sha256', PASSWORD, 'instance:home', 'nextcloud-broker list cursor v1', 32),
    );
    const body = Buffer.from(JSON.stringify({ v: 1, i: 'home', p: 'Docs', o: 7 })).toString(
      'base64url',
    );
    const mac = createHmac('sha256', key).update(body).digest('base64url');
    expect(codec.decode(`${body}.${mac}`, 'Docs')).toBe(7);
  });

  it('property: any bit flip of a valid cursor is refused', () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 63 }), (pos, delta) => {
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        const i = pos % good.length;
        const ch = good[i] as string;
        if (ch === '.') return;
        const replaced = alphabet[(alphabet.indexOf(ch) + delta) % 64] as string;
        const tampered = good.slice(0, i) + replaced + good.slice(i + 1);
        // The last MAC character carries 2 unused bits: a change there may decode to the
        // same MAC bytes, which is not a forgery.
        if (
          Buffer.from(tampered.split('.')[1] ?? '', 'base64url').equals(
            Buffer.from(good.split('.')[1] ?? '', 'base64url'),
          ) &&
          tampered.split('.')[0] === good.split('.')[0]
        )
          return;
        badCursor(() => codec.decode(tampered, 'Docs'));
      }),
      { numRuns: 500 },
    );
  });

  it('property: random strings are never accepted', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), (s) => {
        badCursor(() => codec.decode(s, 'Docs'));
      }),
    );
  });
});
