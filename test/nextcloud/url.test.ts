import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NextcloudError } from '../../broker/nextcloud/errors.js';
import {
  assembleDavUrl,
  buildDavUrl,
  decodePathname,
  parseBaseUrl,
  strictDecodeSegment,
} from '../../broker/nextcloud/url.js';

const BASE = 'https://cloud.example.org';
const PREFIX = '/remote.php/dav/files/alice';

function invalidPath(run: () => unknown): NextcloudError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(NextcloudError);
    expect((err as NextcloudError).code).toBe('invalid_path');
    return err as NextcloudError;
  }
  throw new Error('expected invalid_path');
}

describe('buildDavUrl', () => {
  it('builds the files URL with every component encoded', () => {
    const url = buildDavUrl(BASE, 'alice', 'Docs/Café a+b:c #1?.txt');
    expect(url.href).toBe(`${BASE}${PREFIX}/Docs/Caf%C3%A9%20a%2Bb%3Ac%20%231%3F.txt`);
  });

  it('builds the root with a trailing slash', () => {
    expect(buildDavUrl(BASE, 'alice', '').pathname).toBe(`${PREFIX}/`);
  });

  it('keeps a base path prefix and drops trailing slashes of the base', () => {
    expect(buildDavUrl('http://127.0.0.1:8080/nextcloud//', 'alice', 'a').href).toBe(
      'http://127.0.0.1:8080/nextcloud/remote.php/dav/files/alice/a',
    );
  });

  it('encodes the user name as one component', () => {
    expect(buildDavUrl(BASE, 'a b@c.de', 'x').pathname).toBe(
      '/remote.php/dav/files/a%20b%40c.de/x',
    );
    invalidPath(() => buildDavUrl(BASE, 'a/b', 'x'));
    invalidPath(() => buildDavUrl(BASE, '', 'x'));
  });

  it('refuses a base URL with credentials, a query, a fragment or another scheme', () => {
    invalidPath(() => buildDavUrl('https://u:p@cloud.example.org', 'alice', 'x'));
    invalidPath(() => buildDavUrl('https://cloud.example.org/?a=1', 'alice', 'x'));
    invalidPath(() => buildDavUrl('https://cloud.example.org/#f', 'alice', 'x'));
    invalidPath(() => buildDavUrl('ftp://cloud.example.org', 'alice', 'x'));
    invalidPath(() => buildDavUrl('not a url', 'alice', 'x'));
  });
});

describe('buildDavUrl: path traversal and smuggling attacks', () => {
  it.each([
    ['..', 'a/../b'],
    ['.', 'a/./b'],
    ['leading dot-dot', '../etc'],
    ['backslash', 'a\\b'],
    ['backslash traversal', '..\\..\\x'],
    ['tab', 'a\tb'],
    ['newline', 'a\nb'],
    ['carriage return', 'a\rb'],
    ['NUL', 'a\u0000b'],
    ['DEL', 'a\u007fb'],
    ['C1 control', 'a\u0085b'],
    ['line separator', 'a\u2028b'],
    ['empty component', 'a//b'],
    ['leading slash', '/a'],
    ['trailing slash', 'a/'],
    ['lone surrogate', 'a\ud800b'],
    ['component over 250 bytes', 'x'.repeat(251)],
    ['URL over 4000 bytes', Array.from({ length: 20 }, () => 'y'.repeat(200)).join('/')],
  ])('refuses %s', (_name, path) => {
    const err = invalidPath(() => buildDavUrl(BASE, 'alice', path));
    expect(err.message).not.toContain('\n');
  });

  it('accepts a component of exactly 250 bytes', () => {
    const c = 'é'.repeat(125);
    expect(decodePathname(buildDavUrl(BASE, 'alice', c).pathname)?.at(-1)).toBe(c);
  });

  it('sends %2e%2e as a literal name, never as a parent reference', () => {
    const url = buildDavUrl(BASE, 'alice', 'a/%2e%2e/b');
    expect(url.pathname).toBe(`${PREFIX}/a/%252e%252e/b`);
    expect(decodePathname(url.pathname)?.slice(-3)).toEqual(['a', '%2e%2e', 'b']);
  });

  it('sends %2F as a literal name, never as a separator', () => {
    const url = buildDavUrl(BASE, 'alice', 'a%2Fb');
    expect(url.pathname).toBe(`${PREFIX}/a%252Fb`);
  });

  it('the re-parse check catches a parser rewrite even without validation', () => {
    const base = parseBaseUrl(BASE);
    // assembleDavUrl does no component validation: only the re-parse can catch these.
    invalidPath(() => assembleDavUrl(base, 'alice', ['a', '..', 'b']));
    invalidPath(() => assembleDavUrl(base, 'alice', ['..']));
    invalidPath(() => assembleDavUrl(base, 'alice', ['a', '.', 'b']));
    invalidPath(() => assembleDavUrl(base, 'alice', ['a', '', 'b']));
    invalidPath(() => assembleDavUrl(base, 'alice', ['a/b']));
    expect(assembleDavUrl(base, 'alice', ['a\\b']).pathname).toBe(`${PREFIX}/a%5Cb`);
  });

  it('property: any accepted path round-trips to exactly its components', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }), {
          minLength: 1,
          maxLength: 5,
        }),
        (components) => {
          const path = components.join('/');
          let url: URL;
          try {
            url = buildDavUrl(BASE, 'alice', path);
          } catch (err) {
            // Refusal is always the typed invalid_path, never another failure.
            expect(err).toBeInstanceOf(NextcloudError);
            expect((err as NextcloudError).code).toBe('invalid_path');
            return;
          }
          const decoded = decodePathname(url.pathname);
          expect(decoded?.slice(0, 4)).toEqual(['remote.php', 'dav', 'files', 'alice']);
          expect(decoded?.slice(4)).toEqual(path.split('/'));
          expect(url.origin).toBe(BASE);
          expect(url.search).toBe('');
          expect(url.hash).toBe('');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('strictDecodeSegment', () => {
  it('decodes valid escapes in either case', () => {
    expect(strictDecodeSegment('caf%c3%a9')).toBe('café');
    expect(strictDecodeSegment('caf%C3%A9')).toBe('café');
    expect(strictDecodeSegment('a:b')).toBe('a:b');
  });
  it.each(['%', '%2', '%zz', 'a%g1', '%c3', '%ff', '%e0%80'])('rejects %s', (s) => {
    expect(strictDecodeSegment(s)).toBeUndefined();
  });
});
