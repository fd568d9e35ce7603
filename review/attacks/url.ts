/**
 * Attacks on the WebDAV URL builder (broker/nextcloud/url.ts): components, user names
 * and base URLs that the WHATWG URL parser (or Apache after it) would rewrite. A
 * verdict of `exact` means the URL that would be sent decodes back to exactly the
 * components given; `refused` means the builder threw before anything was sent.
 */
import { NextcloudError } from '../../broker/nextcloud/errors.js';
import { buildDavUrl, decodePathname } from '../../broker/nextcloud/url.js';
import type { Case, Group } from '../runner.js';

const BASE = 'http://127.0.0.1:8080';
const USER = 'alice';

/** `exact` when the built URL carries exactly `path`'s components under the user's prefix. */
function roundTrip(path: string, user = USER, base = BASE): string {
  let url: URL;
  try {
    url = buildDavUrl(base, user, path);
  } catch (error) {
    if (error instanceof NextcloudError) return 'refused';
    throw error;
  }
  const segments = decodePathname(url.pathname);
  if (segments === undefined) return 'undecodable';
  const prefix = decodePathname(new URL(base).pathname.replace(/\/+$/, '')) ?? [];
  const expected = [...prefix.filter((s) => s !== ''), 'remote.php', 'dav', 'files', user];
  const head = segments.slice(0, expected.length);
  const tail = segments.slice(expected.length);
  const same =
    head.every((s, i) => s === expected[i]) &&
    tail.length === path.split('/').length &&
    tail.every((s, i) => s === path.split('/')[i]);
  return same ? 'exact' : `rewritten to ${url.pathname.slice(0, 80)}`;
}

const exact = (name: string, path: string): Case => ({
  name: `component ${name}`,
  expect: 'exact',
  run: () => roundTrip(path),
});
const refused = (name: string, path: string, user = USER): Case => ({
  name,
  expect: 'refused',
  run: () => roundTrip(path, user),
});

export const urlGroup: Group = {
  title: 'attacks: the WebDAV URL builder (what the WHATWG parser would rewrite)',
  build: () => ({
    cases: [
      exact('"%2e%2e" (an encoded dot segment, sent as a literal name)', 'a/%2e%2e/b'),
      exact('".%2E" (half-encoded dot segment)', 'a/.%2E/b'),
      exact('"%2F" (an encoded slash)', 'a/x%2Fy'),
      exact('"%252e" (double-encoded dot)', 'a/%252e'),
      exact('"a?b#c" (query and fragment delimiters)', 'a/a?b#c'),
      exact('";type=a" (a path parameter for some servers)', 'a/;type=a'),
      exact('"。。" (ideographic full stops: dots only in host names)', 'a/\u3002\u3002/b'),
      exact('"[::1]" and "@evil.example" (authority look-alikes)', '[::1]/@evil.example'),
      exact('"http:" and "C:" (scheme and drive look-alikes)', 'http:/C:'),
      exact('" lead" and "trail " (spaces the wall would refuse)', ' lead/trail '),
      exact('NBSP and zero-width space (the wall would refuse them)', '\u00A0/a\u200Bb'),
      exact('of 83 CJK characters + "a" = exactly 250 bytes', `${'\u6F22'.repeat(83)}a`),
      refused('a component of 251 bytes (Nextcloud answers 400)', `${'\u6F22'.repeat(83)}ab`),
      refused('"." component', 'a/./b'),
      refused('".." component', 'a/../b'),
      refused('backslash inside a name (a separator in special schemes)', 'a/x\\y'),
      refused('TAB inside a name (the parser strips it)', 'a/x\ty'),
      refused('U+0085 NEXT LINE inside a name (C1 control)', 'a/x\u0085y'),
      refused('a lone surrogate (no UTF-8 form)', 'a/x\uD800y'),
      refused('empty component ("a//b")', 'a//b'),
      refused('user name ".." (would climb out of files/)', 'x', '..'),
      refused('user name "."', 'x', '.'),
      refused('user name with a slash', 'x', 'a/b'),
      {
        name: 'user name "%2e%2e" is one literal segment',
        expect: 'exact',
        run: () => roundTrip('x', '%2e%2e'),
      },
      {
        name: 'user name "alice@evil.example" stays in the path, never the authority',
        expect: 'exact, host 127.0.0.1',
        run: () => {
          const host = buildDavUrl(BASE, 'alice@evil.example', 'x').hostname;
          return `${roundTrip('x', 'alice@evil.example')}, host ${host}`;
        },
      },
      {
        name: 'a 1 500-byte CJK path (wall-valid) whose encoded URL passes 4 000 bytes',
        expect: 'refused',
        run: () => roundTrip(Array(7).fill('\u6F22'.repeat(70)).join('/')),
      },
      {
        name: 'base URL with "/%2e%2e/" in its path: resolved before the prefix is built',
        expect: 'exact',
        run: () => roundTrip('x', USER, `${BASE}/nc/%2e%2e/`),
      },
      {
        name: 'base URL with credentials is refused (the password would go elsewhere)',
        expect: 'refused',
        run: () => roundTrip('x', USER, 'http://u:p@127.0.0.1:8080/'),
      },
    ],
  }),
};
