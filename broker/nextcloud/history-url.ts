/**
 * The URLs of what Nextcloud keeps beside the user's files: file versions
 * (`/remote.php/dav/versions/<user>/…`), the trash bin (`/remote.php/dav/trashbin/<user>/…`),
 * the calendar trash bin (`/remote.php/dav/calendars/<user>/trashbin/…`) and the Activity
 * app's stream. Built only here, from the instance's own user name and values Nextcloud
 * gave (file ids, version names, trash bin names), each one path segment: a value that is
 * not one is refused before anything is sent.
 */
import { NextcloudError } from './errors.js';
import { parseBaseUrl, urlUnder } from './url.js';

function invalid(what: string): NextcloudError {
  return new NextcloudError('invalid_argument', `invalid ${what}: nothing was sent`);
}

/** A file id as Nextcloud spells it (`oc:fileid`, digits; kept as a string past 2^53). */
export const FILE_ID = /^\d{1,24}$/;
/** A version's name: the mtime in seconds of the content it holds. */
export const VERSION_NAME = /^\d{1,20}$/;

/** One segment Nextcloud named (a trash bin item): no separator, no control, not a dot name. */
function checkSegment(segment: string, what: string): void {
  // Security: a server-given name must stay one segment of the URL it is sent back in.
  if (
    segment === '' ||
    segment === '.' ||
    segment === '..' ||
    segment.includes('/') ||
    segment.includes('\\') ||
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f]/.test(segment) ||
    Buffer.byteLength(segment, 'utf8') > 1024
  )
    throw invalid(what);
}

/** `<base>/<fixed…>/<segments…>`, each segment encoded, naming exactly those segments. */
function under(base: string, fixed: readonly string[], segments: readonly string[], slash = false) {
  const url = urlUnder(parseBaseUrl(base), [...fixed, ...segments], slash);
  // Security: the URL parser must not have rewritten any segment (dot segments, `%2e`).
  if (url === undefined) throw invalid('URL');
  return url;
}

function user(username: string): string {
  if (username === '' || username.includes('/')) throw invalid('user name');
  return username;
}

/** `versions/<user>/versions/<fileid>` (the list), or one version in it. */
export function versionsUrl(base: string, username: string, fileId: string, name?: string): URL {
  if (!FILE_ID.test(fileId)) throw invalid('file id');
  if (name !== undefined && !VERSION_NAME.test(name)) throw invalid('version name');
  const segments = name === undefined ? [fileId] : [fileId, name];
  return under(base, ['remote.php', 'dav', 'versions', user(username), 'versions'], segments);
}

/** Where a version is moved to be restored: `versions/<user>/restore/target`. */
export function versionRestoreUrl(base: string, username: string): URL {
  return under(base, ['remote.php', 'dav', 'versions', user(username), 'restore', 'target'], []);
}

/** `trashbin/<user>/trash/` (the list), or one item in it. */
export function trashUrl(base: string, username: string, item?: string): URL {
  if (item !== undefined) checkSegment(item, 'trash bin item');
  const fixed = ['remote.php', 'dav', 'trashbin', user(username), 'trash'];
  return item === undefined ? under(base, fixed, [], true) : under(base, fixed, [item]);
}

/** Where a trash bin item is moved to be restored: `trashbin/<user>/restore/<item>`. */
export function trashRestoreUrl(base: string, username: string, item: string): URL {
  checkSegment(item, 'trash bin item');
  return under(base, ['remote.php', 'dav', 'trashbin', user(username), 'restore'], [item]);
}

/** `calendars/<user>/trashbin/objects/` (the list), or one item in it (`<n>.ics`). */
export function calendarTrashUrl(base: string, username: string, item?: string): URL {
  if (item !== undefined) checkSegment(item, 'calendar trash bin item');
  const fixed = ['remote.php', 'dav', 'calendars', user(username), 'trashbin', 'objects'];
  return item === undefined ? under(base, fixed, [], true) : under(base, fixed, [item]);
}

/** Where a calendar trash bin item is moved to be restored. */
export function calendarRestoreUrl(base: string, username: string, item: string): URL {
  checkSegment(item, 'calendar trash bin item');
  return under(
    base,
    ['remote.php', 'dav', 'calendars', user(username), 'trashbin', 'restore'],
    [item],
  );
}

/** The Activity app's stream of the signed-in user (OCS v2): all of it, or their own changes. */
export function activityUrl(base: string, filter: 'all' | 'self' = 'all'): URL {
  return under(base, ['ocs', 'v2.php', 'apps', 'activity', 'api', 'v2', 'activity', filter], []);
}
