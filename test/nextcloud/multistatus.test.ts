import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NextcloudError } from '../../broker/nextcloud/errors.js';
import {
  childrenOf,
  compareCodePoints,
  decodeHref,
  parseMultistatus,
  selfEntry,
} from '../../broker/nextcloud/multistatus.js';

const ORIGIN = 'http://127.0.0.1:8080';
const ROOT = '/remote.php/dav/files/alice';

interface Item {
  href: string;
  folder?: boolean;
  size?: number;
  etag?: string;
}

/** A reply shaped like Nextcloud 29's: folders carry getcontentlength in a 404 propstat. */
function multistatus(items: Item[]): string {
  const responses = items.map((it) => {
    const ok = [
      it.folder ? '<d:resourcetype><d:collection/></d:resourcetype>' : '<d:resourcetype/>',
      '<d:getlastmodified>Tue, 05 Mar 2024 10:00:00 GMT</d:getlastmodified>',
      `<d:getetag>${it.etag ?? '&quot;65e6ed2f0a1b2&quot;'}</d:getetag>`,
      '<oc:fileid>42</oc:fileid><oc:permissions>RGDNVW</oc:permissions>',
      it.folder ? '' : `<d:getcontentlength>${it.size ?? 3}</d:getcontentlength>`,
    ].join('');
    const missing = it.folder
      ? '<d:propstat><d:prop><d:getcontentlength/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>'
      : '';
    return `<d:response><d:href>${it.href}</d:href>${missing}<d:propstat><d:prop>${ok}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;
  });
  return `<?xml version="1.0"?>\n<d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">${responses.join('')}</d:multistatus>`;
}

function badResponse(run: () => unknown, code = 'bad_response'): NextcloudError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(NextcloudError);
    expect((err as NextcloudError).code).toBe(code);
    expect((err as NextcloudError).retry).toBe(false);
    return err as NextcloudError;
  }
  throw new Error(`expected ${code}`);
}

const list = (xml: string, folder: string, requestPath: string) =>
  childrenOf(parseMultistatus(xml), folder, decodeHref(requestPath, ORIGIN), ORIGIN);

describe('Depth 1 listing', () => {
  it('drops the folder itself and maps entries; a 404 propstat does not hide the rest', () => {
    const entries = list(
      multistatus([
        { href: `${ROOT}/Docs/`, folder: true },
        { href: `${ROOT}/Docs/b.txt`, size: 12, etag: '&quot;abc&quot;' },
        { href: `${ROOT}/Docs/Sub/`, folder: true },
      ]),
      'Docs',
      `${ROOT}/Docs`,
    );
    expect(entries).toEqual([
      {
        name: 'Sub',
        path: 'Docs/Sub',
        kind: 'folder',
        size: null,
        modified: '2024-03-05T10:00:00.000Z',
        etag: '"65e6ed2f0a1b2"',
        fileId: '42',
      },
      {
        name: 'b.txt',
        path: 'Docs/b.txt',
        kind: 'file',
        size: 12,
        modified: '2024-03-05T10:00:00.000Z',
        etag: '"abc"',
        fileId: '42',
      },
    ]);
  });

  it('lists the root', () => {
    const entries = list(
      multistatus([{ href: `${ROOT}/`, folder: true }, { href: `${ROOT}/a.txt` }]),
      '',
      `${ROOT}/`,
    );
    expect(entries.map((e) => e.path)).toEqual(['a.txt']);
  });

  it('a child named like its folder is a child (own entry is found by full href, not by name)', () => {
    const entries = list(
      multistatus([
        { href: `${ROOT}/Docs/Docs/`, folder: true },
        { href: `${ROOT}/Docs/`, folder: true },
      ]),
      'Docs',
      `${ROOT}/Docs`,
    );
    expect(entries.map((e) => e.path)).toEqual(['Docs/Docs']);
  });

  it('decodes lowercase escapes, `:` and `%2b`, and entities; names come out NFC', () => {
    const nfd = encodeURIComponent('Cafe\u0301').replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    const entries = list(
      multistatus([
        { href: `${ROOT}/D/`, folder: true },
        { href: `${ROOT}/D/${nfd}.txt` },
        { href: `${ROOT}/D/a:b%2bc%20&amp;.txt` },
      ]),
      'D',
      `${ROOT}/D`,
    );
    expect(entries.map((e) => e.name)).toEqual(['Café.txt', 'a:b+c &.txt']);
    expect(entries[0]?.name).toBe('Caf\u00e9.txt');
  });

  it('sorts folders first, then by code point (not UTF-16 unit) order', () => {
    const names = ['b', 'B', '\u{1F600}', '\uFFFD', 'a'];
    const entries = list(
      multistatus([
        { href: `${ROOT}/D/`, folder: true },
        ...names.map((n) => ({ href: `${ROOT}/D/${encodeURIComponent(n)}` })),
        { href: `${ROOT}/D/zz/`, folder: true },
      ]),
      'D',
      `${ROOT}/D`,
    );
    expect(entries.map((e) => e.name)).toEqual(['zz', 'B', 'a', 'b', '\uFFFD', '\u{1F600}']);
  });

  it('accepts absolute hrefs on the same origin', () => {
    const entries = list(
      multistatus([
        { href: `${ORIGIN}${ROOT}/D/`, folder: true },
        { href: `${ORIGIN}${ROOT}/D/x` },
      ]),
      'D',
      `${ROOT}/D`,
    );
    expect(entries.map((e) => e.name)).toEqual(['x']);
  });

  it('refuses listing a file', () => {
    badResponse(
      () => list(multistatus([{ href: `${ROOT}/f.txt` }]), 'f.txt', `${ROOT}/f.txt`),
      'not_folder',
    );
  });

  it('keeps only well-formed etags and sizes', () => {
    const entries = list(
      multistatus([
        { href: `${ROOT}/D/`, folder: true },
        { href: `${ROOT}/D/a`, etag: 'no-quotes' },
      ]),
      'D',
      `${ROOT}/D`,
    );
    expect(entries[0]?.etag).toBeNull();
  });
});

describe('hostile listings (a compromised or confused server)', () => {
  const own = { href: `${ROOT}/D/`, folder: true };
  it.each([
    ['a malformed escape', `${ROOT}/D/bad%zz`],
    ['a truncated escape', `${ROOT}/D/bad%2`],
    ['invalid UTF-8', `${ROOT}/D/bad%ff`],
    ['an encoded slash inside a name', `${ROOT}/D/a%2fb`],
    ['an encoded dot-dot name', `${ROOT}/D/%2e%2e`],
    ['a literal dot-dot', `${ROOT}/D/../x`],
    ['a sibling folder', `${ROOT}/E/x`],
    ['a grandchild', `${ROOT}/D/sub/x`],
    ['a prefix look-alike', `${ROOT}/Dx/y`],
    ['another user', '/remote.php/dav/files/bob/D/x'],
    ['another server', `http://evil.example${ROOT}/D/x`],
    ['a relative href', 'D/x'],
    ['a query', `${ROOT}/D/x?y`],
    ['an encoded NUL', `${ROOT}/D/a%00`],
  ])('rejects %s', (_name, href) => {
    const err = badResponse(() => list(multistatus([own, { href }]), 'D', `${ROOT}/D`));
    expect(err.message).not.toContain('\n');
  });

  it('rejects a listing without the folder itself', () => {
    badResponse(() => list(multistatus([{ href: `${ROOT}/D/x` }]), 'D', `${ROOT}/D`));
  });

  it('refuses a DOCTYPE (entity expansion)', () => {
    const xml = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><d:multistatus xmlns:d="DAV:"/>`;
    badResponse(() => parseMultistatus(xml));
  });

  it.each([
    ['not XML', 'hello'],
    ['unclosed tags', '<d:multistatus xmlns:d="DAV:"><d:response>'],
    ['another root', '<d:foo xmlns:d="DAV:"/>'],
    ['a response without href', '<d:multistatus xmlns:d="DAV:"><d:response/></d:multistatus>'],
  ])('rejects %s', (_name, xml) => {
    badResponse(() => parseMultistatus(xml));
  });

  it('accepts an empty multistatus', () => {
    expect(parseMultistatus('<d:multistatus xmlns:d="DAV:"/>')).toEqual([]);
  });

  it('property: every accepted child lies directly inside the folder and has a clean name', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (tail) => {
        const href = `${ROOT}/D/${tail.replace(/[<&]/g, '')}`;
        let entries;
        try {
          entries = list(multistatus([own, { href }]), 'D', `${ROOT}/D`);
        } catch (err) {
          expect(err).toBeInstanceOf(NextcloudError);
          return;
        }
        for (const e of entries) {
          expect(e.name).not.toMatch(/^\.{0,2}$/);
          expect(e.name).not.toContain('/');
          expect(e.path).toBe(`D/${e.name}`);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('Depth 0 stat', () => {
  it('returns the one entry', () => {
    const xml = multistatus([{ href: `${ROOT}/D/a%20b.txt`, size: 5 }]);
    expect(
      selfEntry(
        parseMultistatus(xml),
        'D/a b.txt',
        decodeHref(`${ROOT}/D/a%20b.txt`, ORIGIN),
        ORIGIN,
      ),
    ).toMatchObject({ name: 'a b.txt', path: 'D/a b.txt', kind: 'file', size: 5 });
  });
  it('rejects a reply about another resource or with extra responses', () => {
    const req = decodeHref(`${ROOT}/D/a`, ORIGIN);
    badResponse(() =>
      selfEntry(parseMultistatus(multistatus([{ href: `${ROOT}/D/b` }])), 'D/a', req, ORIGIN),
    );
    badResponse(() =>
      selfEntry(
        parseMultistatus(multistatus([{ href: `${ROOT}/D/a` }, { href: `${ROOT}/D/a/x` }])),
        'D/a',
        req,
        ORIGIN,
      ),
    );
  });
});

describe('compareCodePoints', () => {
  it('orders astral characters after the BMP', () => {
    expect(compareCodePoints('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'ab')).toBe(0);
  });
  it('property: agrees with comparing arrays of code points', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const ca = [...a].map((c) => c.codePointAt(0) ?? 0);
        const cb = [...b].map((c) => c.codePointAt(0) ?? 0);
        let expected = 0;
        for (let i = 0; i < Math.max(ca.length, cb.length) && expected === 0; i += 1) {
          if (ca[i] === undefined) expected = -1;
          else if (cb[i] === undefined) expected = 1;
          else expected = Math.sign((ca[i] as number) - (cb[i] as number));
        }
        expect(Math.sign(compareCodePoints(a, b))).toBe(expected);
      }),
    );
  });
});
