/**
 * Builds the WebDAV URL for a canonical path: `<url>/remote.php/dav/files/<user>/<c1>/<c2>…`
 * with every component `encodeURIComponent`-ed.
 *
 * Security: the wall has already refused hostile paths; this is the second line. A
 * component that could change meaning on its way to the server (`.`/`..` and their
 * encodings are resolved by the URL parser or by Apache, a backslash is a separator to
 * some parsers, control characters are stripped or refused) is refused here, and the
 * finished URL is re-parsed with the WHATWG parser and must decode to exactly the same
 * components. If anything rewrote it, nothing is sent.
 */
import { NEXTCLOUD_MAX_NAME_BYTES, NEXTCLOUD_MAX_URL_PATH_BYTES } from '../base/limits.js';
import { CONTROL_OR_LINE_SEPARATOR } from '../base/text.js';
import { NextcloudError } from './errors.js';

function invalid(reason: string): NextcloudError {
  return new NextcloudError('invalid_path', `invalid path: ${reason}; use the path as listed`);
}

/**
 * Split a canonical path into components, refusing anything that is not canonical.
 * '' (the root) has no components.
 */
export function pathComponents(path: string): string[] {
  if (typeof path !== 'string') throw invalid('not a string');
  if (path === '') return [];
  const components = path.split('/');
  for (const c of components) {
    // Security: each of these would let the server (or a proxy) resolve the path to
    // something other than what the wall checked.
    if (c === '') throw invalid('empty component (leading, trailing or double slash)');
    if (c === '.' || c === '..') throw invalid('dot component');
    if (c.includes('\\')) throw invalid('backslash in a name');
    if (CONTROL_OR_LINE_SEPARATOR.test(c)) throw invalid('control character');
    if (Buffer.byteLength(c, 'utf8') > NEXTCLOUD_MAX_NAME_BYTES)
      throw invalid(`a name over ${NEXTCLOUD_MAX_NAME_BYTES} bytes`);
  }
  return components;
}

/** Strictly percent-decode one URL path segment: every `%` must start a valid UTF-8 escape. */
export function strictDecodeSegment(segment: string): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/.test(segment)) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function encodeComponent(c: string): string {
  try {
    return encodeURIComponent(c);
  } catch {
    // Lone surrogates cannot be encoded.
    throw invalid('not valid Unicode');
  }
}

/** The parsed base URL of an instance (its path may end in a slash). */
export function parseBaseUrl(base: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw invalid('the instance URL does not parse');
  }
  // Security: credentials, a query or a fragment in the base would change what the
  // request means or where the password goes; config refuses them too.
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid('the instance URL must be http or https');
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
    throw invalid('the instance URL must not carry credentials, a query or a fragment');
  return url;
}

/** The URL path prefix of the user's files: `<base path>/remote.php/dav/files/<user>`. */
export function davFilesPrefix(base: URL, username: string): string {
  return `${base.pathname.replace(/\/+$/, '')}/remote.php/dav/files/${encodeComponent(username)}`;
}

/** Split a URL pathname into strictly decoded segments (no leading empty one). */
export function decodePathname(pathname: string): string[] | undefined {
  const out: string[] = [];
  for (const segment of pathname.split('/').slice(1)) {
    const decoded = strictDecodeSegment(segment);
    if (decoded === undefined) return undefined;
    out.push(decoded);
  }
  return out;
}

/**
 * Encode components onto the user's files prefix and re-parse the result. Exported for
 * tests of the re-parse check; production code calls `buildDavUrl`, which validates
 * the components first.
 */
export function assembleDavUrl(baseUrl: URL, username: string, components: readonly string[]): URL {
  const prefix = davFilesPrefix(baseUrl, username);
  const expectedPath = `${prefix}/${components.map(encodeComponent).join('/')}`;
  if (Buffer.byteLength(expectedPath, 'utf8') > NEXTCLOUD_MAX_URL_PATH_BYTES)
    throw invalid(`the URL would exceed ${NEXTCLOUD_MAX_URL_PATH_BYTES} bytes`);

  let reparsed: URL;
  try {
    reparsed = new URL(`${baseUrl.origin}${expectedPath}`);
  } catch {
    throw invalid('the URL does not parse');
  }
  // Security: the parser must not have rewritten anything (dot segments, `%2e`,
  // backslashes, tabs); the pathname must decode to exactly the components.
  const decoded = decodePathname(reparsed.pathname);
  const prefixDecoded = decodePathname(prefix);
  if (decoded === undefined || prefixDecoded === undefined)
    throw invalid('the URL does not decode');
  const tail = decoded.slice(prefixDecoded.length);
  const expectedTail = components.length === 0 ? [''] : components;
  const same =
    decoded.length === prefixDecoded.length + expectedTail.length &&
    prefixDecoded.every((s, i) => decoded[i] === s) &&
    expectedTail.every((c, i) => tail[i] === c && !c.includes('/')) &&
    (components.length === 0 || components.every((c) => c !== ''));
  if (!same || reparsed.pathname !== expectedPath) throw invalid('the URL parser rewrote the path');
  return reparsed;
}

/**
 * `<base path>/<components…>` (with a trailing `/` for a collection), each component
 * encoded; undefined when the URL parser rewrote anything (a dot segment, `%2e`), so the
 * URL would not name exactly those components: the caller refuses it.
 */
export function urlUnder(
  baseUrl: URL,
  components: readonly string[],
  collection: boolean,
): URL | undefined {
  const prefix = baseUrl.pathname.replace(/\/+$/, '');
  const path = `${prefix}/${components.map((c) => encodeURIComponent(c)).join('/')}${collection ? '/' : ''}`;
  let url: URL;
  try {
    url = new URL(`${baseUrl.origin}${path}`);
  } catch {
    return undefined;
  }
  const decoded = decodePathname(url.pathname);
  const expected = [...(decodePathname(prefix) ?? []), ...components, ...(collection ? [''] : [])];
  const exact =
    url.pathname === path &&
    decoded !== undefined &&
    decoded.length === expected.length &&
    decoded.every((s, i) => s === expected[i]);
  return exact ? url : undefined;
}

export function buildDavUrl(base: string, username: string, path: string): URL {
  const baseUrl = parseBaseUrl(base);
  if (username === '' || username.includes('/')) throw invalid('bad user name');
  return assembleDavUrl(baseUrl, username, pathComponents(path));
}

/**
 * The one URL Nextcloud takes a WebDAV SEARCH on: `<url>/remote.php/dav/` (any other
 * answers 501).
 */
export function davSearchUrl(base: string): URL {
  const baseUrl = parseBaseUrl(base);
  return new URL(`${baseUrl.origin}${baseUrl.pathname.replace(/\/+$/, '')}/remote.php/dav/`);
}

/**
 * A SEARCH scope for a canonical folder path ('' = the user's root): `/files/<user>/<path>`
 * relative to the DAV root. Security: Nextcloud does not percent-decode a scope, so the
 * components go raw (the XML body escapes them) after the same checks as a URL's.
 */
export function searchScope(username: string, path: string): string {
  if (username === '' || username.includes('/')) throw invalid('bad user name');
  const components = pathComponents(path);
  return components.length === 0
    ? `/files/${username}`
    : `/files/${username}/${components.join('/')}`;
}

/**
 * The URL of one of the user's chunked-upload folders (or a chunk in it):
 * `<url>/remote.php/dav/uploads/<user>/<id>[/<name>]`. `id` and `name` are the broker's
 * own (letters, digits, `-`, `.`), never an agent's.
 */
export function buildUploadUrl(base: string, username: string, id: string, name?: string): URL {
  const baseUrl = parseBaseUrl(base);
  if (username === '' || username.includes('/')) throw invalid('bad user name');
  for (const part of name === undefined ? [id] : [id, name])
    if (!/^[A-Za-z0-9.-]{1,64}$/.test(part) || part === '.' || part === '..')
      throw invalid('bad upload folder name');
  const prefix = `${baseUrl.pathname.replace(/\/+$/, '')}/remote.php/dav/uploads/${encodeComponent(username)}`;
  return new URL(`${baseUrl.origin}${prefix}/${id}${name === undefined ? '' : `/${name}`}`);
}
