/**
 * File content over WebDAV: a download (GET) and an upload (PUT), both streamed, never
 * buffered. Security decisions, each marked below: only files are read, and only the
 * version just checked; every write is conditional; an upload is never retried.
 */
import type { Readable } from 'node:stream';
import { NEXTCLOUD_MAX_UPLOAD_NAME_BYTES } from '../base/limits.js';
import { header, type NextcloudConnection } from './connection.js';
import { NextcloudError, type StatusContext } from './errors.js';
import { discard, idleStream } from './http.js';
import { validLockToken } from './locks.js';

export type WriteCondition =
  { ifMatch: string; lockToken?: string } | { ifNoneMatch: '*' } | { lockToken: string };

/** `"x"`, `W/"x"`, or a bare `x` (quoted for the header); nothing that could break a header. */
export function normaliseEtag(etag: string): string | undefined {
  if (typeof etag !== 'string' || etag.length > 256) return undefined;
  if (/^(W\/)?"[\x21\x23-\x7e]*"$/.test(etag)) return etag;
  if (/^[\x21\x23-\x7e]+$/.test(etag)) return `"${etag}"`;
  return undefined;
}

/**
 * Stream a file's bytes (stat first: folders are refused). `range` is inclusive.
 * The stream fails with a NextcloudError on a stall (idle timeout) or a cut.
 */
export async function readStream(
  conn: NextcloudConnection,
  path: string,
  range?: { start: number; end?: number },
  signal?: AbortSignal,
): Promise<{ stream: Readable; size: number | null; etag: string | null }> {
  if (range !== undefined) {
    const { start, end } = range;
    if (
      !Number.isSafeInteger(start) ||
      start < 0 ||
      (end !== undefined && (!Number.isSafeInteger(end) || end < start))
    )
      throw new NextcloudError('invalid_argument', 'the byte range must be 0 <= start <= end');
  }
  const entry = await conn.stat(path, signal);
  // Security: a GET of a folder answers 200 with an HTML page; never hand that out
  // as file content.
  if (entry.kind === 'folder')
    throw new NextcloudError('is_folder', `'${path}' is a folder: list it instead of reading it`);
  const headers: Record<string, string> = {};
  // Security: the bytes must belong to the file just checked. If it changed or was
  // replaced by a folder (whose GET is an HTML page) in between, the server answers
  // 412 instead of streaming something else.
  if (entry.etag !== null) headers['if-match'] = entry.etag;
  if (range !== undefined) headers['range'] = `bytes=${range.start}-${range.end ?? ''}`;
  const url = conn.url(path);
  const res = await conn.call(
    { method: 'GET', url, headers },
    {
      idempotent: true,
      ok: range === undefined ? [200] : [206],
      ctx: { verb: 'GET', instance: conn.name, path },
      deadline: false,
      signal,
    },
  );
  const lengthHeader = header(res, 'content-length');
  const size =
    lengthHeader !== undefined && /^\d{1,15}$/.test(lengthHeader)
      ? Number(lengthHeader)
      : range === undefined
        ? entry.size
        : null;
  const etag = normaliseEtag(header(res, 'etag') ?? '') ?? entry.etag;
  const stream = idleStream(res, conn.timeoutMs, (kind) =>
    conn.scrubbed(
      kind === 'timeout'
        ? conn.timeoutError('GET', path)
        : new NextcloudError(
            'unreachable',
            `the download of '${path}' from instance '${conn.name}' broke off before the end: try again`,
          ),
    ),
  );
  return { stream, size, etag };
}

/**
 * Stream `body` into a file (PUT), never buffered and never retried. Exactly one
 * condition: create-only (`ifNoneMatch: '*'`), replace-if-unchanged (`ifMatch`), or
 * under a lock (`lockToken`, optionally with `ifMatch`). `size` becomes Content-Length
 * and is enforced. On failure the body may be partly read; the caller still owns it.
 */
export async function writeStream(
  conn: NextcloudConnection,
  path: string,
  body: Readable,
  cond: WriteCondition,
  size?: number,
  signal?: AbortSignal,
): Promise<{ etag: string | null }> {
  const url = conn.url(path);
  const name = path.split('/').pop() ?? '';
  if (Buffer.byteLength(name, 'utf8') > NEXTCLOUD_MAX_UPLOAD_NAME_BYTES)
    throw new NextcloudError(
      'name_too_long',
      `'${name.slice(0, 40)}…' is too long to upload (Nextcloud fails names from ${NEXTCLOUD_MAX_UPLOAD_NAME_BYTES + 1} bytes): choose a shorter name`,
    );
  if (size !== undefined && (!Number.isSafeInteger(size) || size < 0))
    throw new NextcloudError('invalid_argument', 'the size must be a non-negative integer');
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  let write: StatusContext['write'];
  // Security: every write is conditional, so nothing is overwritten by accident.
  if ('ifNoneMatch' in cond) {
    if (cond.ifNoneMatch !== '*')
      throw new NextcloudError('invalid_argument', "if_none_match must be '*'");
    headers['if-none-match'] = '*';
    write = 'create';
  } else if ('ifMatch' in cond) {
    const etag = normaliseEtag(cond.ifMatch);
    if (etag === undefined)
      throw new NextcloudError('invalid_argument', 'the etag is malformed: pass it as read');
    headers['if-match'] = etag;
    write = 'replace';
  } else write = 'locked';
  const lockToken = 'lockToken' in cond ? cond.lockToken : undefined;
  if (lockToken !== undefined) {
    if (!validLockToken(lockToken))
      throw new NextcloudError(
        'invalid_argument',
        'the lock token is malformed: pass it as returned',
      );
    headers['if'] = `(<${lockToken}>)`;
    if (write === 'replace') write = 'replace_locked';
  } else if (write === 'locked')
    throw new NextcloudError(
      'invalid_argument',
      'a write needs if_match, if_none_match or a lock token',
    );

  // Security: never retried — the body stream is consumed by the first attempt.
  const res = await conn.call(
    {
      method: 'PUT',
      url,
      headers,
      body,
      ...(size === undefined ? {} : { contentLength: size }),
      expectContinue: true,
    },
    {
      idempotent: false,
      ok: [200, 201, 204],
      ctx: { verb: 'PUT', instance: conn.name, path, write },
      deadline: false,
      signal,
    },
  );
  discard(res);
  return { etag: normaliseEtag(header(res, 'etag') ?? header(res, 'oc-etag') ?? '') ?? null };
}
