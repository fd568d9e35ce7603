/**
 * URLs of calendars and address books: the homes `<url>/remote.php/dav/calendars/<user>/`
 * and `<url>/remote.php/dav/addressbooks/users/<user>/`, a collection in one, and an
 * object (an `.ics` event) in a collection.
 *
 * Security: as for files (url.ts), each name is one component that cannot change
 * meaning on its way (no `/`, dot names, backslashes or control characters), every
 * component is `encodeURIComponent`-ed, and the finished URL must re-parse to exactly
 * the components it was built from, or nothing is sent.
 */
import type { CollectionKind } from '../base/kinds.js';
import { NextcloudError } from './errors.js';
import { parseBaseUrl, pathComponents, urlUnder } from './url.js';

export type { CollectionKind } from '../base/kinds.js';

function invalid(reason: string): NextcloudError {
  return new NextcloudError(
    'invalid_path',
    `invalid collection name: ${reason}; use a name as listed by collections`,
  );
}

/** The home's segments below the instance's base path. */
export function homeSegments(kind: CollectionKind, user: string): string[] {
  return kind === 'calendar'
    ? ['remote.php', 'dav', 'calendars', user]
    : ['remote.php', 'dav', 'addressbooks', 'users', user];
}

/** Exactly one component, or throws `invalid_path`. */
function oneComponent(name: string): string {
  // Lone surrogates cannot be encoded.
  if (/\p{Cs}/u.test(name)) throw invalid('not valid Unicode');
  const parts = pathComponents(name);
  if (parts.length !== 1) throw invalid(name === '' ? 'empty' : 'more than one component');
  return name;
}

/**
 * The URL of the home (`names` empty), a collection (`[name]`) or an object in one
 * (`[name, object]`). Collections end in `/`, as the server writes them.
 */
export function groupwareUrl(
  base: string,
  user: string,
  kind: CollectionKind,
  names: readonly string[],
): URL {
  const baseUrl = parseBaseUrl(base);
  if (user === '' || user.includes('/')) throw invalid('bad user name');
  if (names.length > 2) throw invalid('too many components');
  const components = [...homeSegments(kind, user), ...names.map(oneComponent)];
  const url = urlUnder(baseUrl, components, names.length < 2);
  // Security: the parser must not have rewritten anything; see the module comment.
  if (url === undefined) throw invalid('the URL parser rewrote it');
  return url;
}
