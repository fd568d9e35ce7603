/**
 * Token locks (RFC 4918 LOCK/UNLOCK, served by the files_lock app): checkout takes an
 * exclusive write lock on an existing file, checkin and the broker's own clean-up
 * release it. Security decisions, each marked below: only existing files are locked, a
 * lock token is never put into a header unless it is plainly one, and a release counts
 * only once Nextcloud's lock properties show the token no longer holds the file.
 */
import { header, type NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { heldBy, inspect, stat } from './inspect.js';
import type { Entry } from './multistatus.js';
import type { Session } from './session.js';

const MAX_LOCK_SECONDS = 7 * 24 * 3600;

/** The body of every checkout LOCK: an exclusive write lock (a token lock). */
export const LOCK_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope>' +
  '<d:locktype><d:write/></d:locktype><d:owner>nextcloud-access-broker</d:owner></d:lockinfo>';

/** A lock token as returned by `lock` (`opaquelocktoken:…`), safe inside `<…>` and `(…)`. */
export function validLockToken(token: string): boolean {
  return typeof token === 'string' && /^[\x21-\x7e]{1,256}$/.test(token) && !/[<>()]/.test(token);
}

/** RFC 4918 exclusive write lock on an existing file; returns `opaquelocktoken:…`. */
export async function lock(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<{ token: string }> {
  if (
    !Number.isSafeInteger(timeoutSeconds) ||
    timeoutSeconds < 1 ||
    timeoutSeconds > MAX_LOCK_SECONDS
  )
    throw new NextcloudError(
      'invalid_argument',
      `the lock timeout must be 1 to ${MAX_LOCK_SECONDS} seconds`,
    );
  // Security: an RFC LOCK on a missing path creates an empty file, and a lock on a
  // folder does not protect the files in it: lock existing files only.
  const entry = await stat({ conn }, path, signal);
  if (entry.kind === 'folder')
    throw new NextcloudError('is_folder', `'${path}' is a folder: only files can be checked out`);
  const url = conn.url(path);
  const { res, text } = await conn.exchange(
    {
      method: 'LOCK',
      url,
      headers: {
        'content-type': 'application/xml; charset=utf-8',
        depth: '0',
        timeout: `Second-${timeoutSeconds}`,
      },
      body: LOCK_BODY,
    },
    {
      idempotent: false,
      ok: [200, 201],
      ctx: { verb: 'LOCK', instance: conn.name, path },
      signal,
    },
  );
  const fromHeader = /^<([^<>]*)>$/.exec(header(res, 'lock-token') ?? '')?.[1];
  const fromBody =
    /<(?:[\w-]+:)?locktoken\b[^>]*>\s*<(?:[\w-]+:)?href\b[^>]*>\s*([^<\s]+)\s*</.exec(text)?.[1];
  const token = fromHeader ?? fromBody;
  if (token === undefined || !validLockToken(token))
    throw new NextcloudError(
      'bad_response',
      `Nextcloud locked '${path}' without returning a usable lock token: the lock may stay until it expires; report this to the owner`,
    );
  if (res.status === 201) {
    // The file vanished between the stat and the LOCK, and the LOCK created an empty
    // one. Remove exactly that file (under our token), then report the path missing.
    await removeCreatedByLock(conn, url, path, token);
    throw new NextcloudError(
      'not_found',
      `'${path}' was deleted while it was being checked out: check the path with list`,
    );
  }
  return { token };
}

/** Release a lock taken by `lock`. */
export async function unlock(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  token: string,
): Promise<void> {
  const url = conn.url(path);
  if (!validLockToken(token))
    throw new NextcloudError(
      'invalid_argument',
      'the lock token is malformed: pass it as returned',
    );
  await conn.exchange(
    { method: 'UNLOCK', url, headers: { 'lock-token': `<${token}>` } },
    { idempotent: false, ok: [200, 204], ctx: { verb: 'UNLOCK', instance: conn.name, path } },
  );
}

/** What a release found: the UNLOCK removed the lock, or the token held nothing any more. */
export interface Released {
  readonly outcome: 'unlocked' | 'not_held';
  /** The file as it is after the release; null when it no longer exists. */
  readonly entry: Entry | null;
}

/**
 * Release a checkout's lock and confirm it is gone. UNLOCK answers 500 with an empty
 * body for a wrong, expired, already released or owner-removed lock alike, so its status
 * proves nothing either way: the lock properties read afterwards decide. Throws when the
 * token still holds the file (or Nextcloud cannot be asked): the caller retries.
 */
export async function releaseLock(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  token: string,
): Promise<Released> {
  let unlocked = false;
  try {
    await unlock({ conn }, path, token);
    unlocked = true;
  } catch (err) {
    if (!(err instanceof NextcloudError) || !['bad_lock_token', 'not_found'].includes(err.code))
      throw err;
  }
  let after;
  try {
    after = await inspect({ conn }, path);
  } catch (err) {
    // The file is gone, and its lock with it.
    if (err instanceof NextcloudError && err.code === 'not_found')
      return { outcome: unlocked ? 'unlocked' : 'not_held', entry: null };
    throw err;
  }
  // Security: released only when Nextcloud shows that this token no longer holds the file.
  if (heldBy(after, token))
    throw new NextcloudError(
      'locked',
      `the checkout lock on '${path}' on instance '${conn.name}' still holds after UNLOCK: the broker tries again`,
    );
  return { outcome: unlocked ? 'unlocked' : 'not_held', entry: after.entry };
}

async function removeCreatedByLock(
  conn: NextcloudConnection,
  url: URL,
  path: string,
  token: string,
): Promise<void> {
  try {
    await conn.exchange(
      { method: 'DELETE', url, headers: { if: `(<${token}>)` } },
      { idempotent: false, ok: [200, 204], ctx: { verb: 'DELETE', instance: conn.name, path } },
    );
  } catch (err) {
    conn.logger.warn('could not remove the empty file a LOCK created', {
      instance: conn.name,
      path,
      code: err instanceof NextcloudError ? err.code : 'unknown',
    });
  }
}
