/**
 * File content over WebDAV: a download (GET), streamed and never buffered. Uploads are
 * uploads.ts. A download is one request: the GET's own answer says whether it carries
 * a file (see readStream). Security decisions, each marked below: only files are read,
 * and nothing the caller passes reaches a header unchecked.
 */
import type { Readable } from 'node:stream';
import { header, type NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { timeoutError } from './failures.js';
import { idleStream, type HttpResponse } from './http.js';
import { stat } from './inspect.js';
import type { Session } from './session.js';
import { ETAG_FORM, isQuotedEtag } from '../base/etag.js';

/** `"x"`, `W/"x"`, or a bare `x` (quoted for the header); nothing that could break a header. */
export function normaliseEtag(etag: string): string | undefined {
  if (typeof etag !== 'string' || etag.length > 256) return undefined;
  if (/^(W\/)?"[\x21\x23-\x7e]*"$/.test(etag)) return etag;
  if (/^[\x21\x23-\x7e]+$/.test(etag)) return `"${etag}"`;
  return undefined;
}

export interface ByteRange {
  readonly start: number;
  readonly end?: number;
}

export interface ReadOptions {
  /** Inclusive; answered 206. */
  readonly range?: ByteRange | undefined;
  readonly signal?: AbortSignal | undefined;
}

export interface ConditionalReadOptions extends ReadOptions {
  /** The etag the caller holds: when it is still the file's, no bytes come (Unchanged). */
  readonly ifNoneMatch: string | undefined;
}

/** A file's bytes as they stream, with its size and etag from the same answer. */
export interface FileStream {
  readonly unchanged: false;
  readonly stream: Readable;
  readonly size: number | null;
  readonly etag: string;
}

/** The file still has the etag the caller holds (304): nothing to stream. */
export interface Unchanged {
  readonly unchanged: true;
  readonly etag: string;
}

function checkRange(range: ByteRange | undefined): void {
  if (range === undefined) return;
  const { start, end } = range;
  if (
    !Number.isSafeInteger(start) ||
    start < 0 ||
    (end !== undefined && (!Number.isSafeInteger(end) || end < start))
  )
    throw new NextcloudError('invalid_argument', 'the byte range must be 0 <= start <= end');
}

/** Drop an answer whose body is not wanted (the socket goes with it: this path is rare). */
function dropBody(res: HttpResponse): void {
  res.body.on('error', () => undefined);
  res.request.destroy();
}

/**
 * Why a 200 without an ETag is not handed out: a folder (stat says so, to word it) or
 * something the broker cannot vouch for as the file's content.
 */
async function unverifiable(
  conn: NextcloudConnection,
  path: string,
  signal: AbortSignal | undefined,
): Promise<NextcloudError> {
  const entry = await stat({ conn }, path, signal);
  if (entry.kind === 'folder')
    return new NextcloudError('is_folder', `'${path}' is a folder: list it instead of reading it`);
  return new NextcloudError(
    'bad_response',
    `Nextcloud answered the download of '${path}' on instance '${conn.name}' without an ETag, so the broker cannot tell it is the file's content; nothing was sent`,
  );
}

/**
 * Stream a file's bytes with one GET; folders are refused. With `ifNoneMatch`, a file
 * that still has that etag answers Unchanged instead of its bytes. The stream fails
 * with a NextcloudError on a stall (idle timeout) or a cut.
 */
export async function readStream(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  options: ConditionalReadOptions | ReadOptions = {},
): Promise<FileStream | Unchanged> {
  const { range, signal } = options;
  const ifNoneMatch = 'ifNoneMatch' in options ? options.ifNoneMatch : undefined;
  checkRange(range);
  // Security: the etag goes into a request header; only a well-formed quoted etag does
  // (no CR/LF, no list, no `*`, bounded), never whatever the caller was handed.
  if (ifNoneMatch !== undefined && !isQuotedEtag(ifNoneMatch))
    throw new NextcloudError('invalid_argument', `If-None-Match must be ${ETAG_FORM}`);
  const headers: Record<string, string> = {};
  if (range !== undefined) headers['range'] = `bytes=${range.start}-${range.end ?? ''}`;
  if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch;
  const res = await conn.call(
    { method: 'GET', url: conn.url(path), headers },
    {
      idempotent: true,
      ok: [range === undefined ? 200 : 206, ...(ifNoneMatch === undefined ? [] : [304])],
      ctx: { verb: 'GET', instance: conn.name, path },
      deadline: false,
      signal,
    },
  );
  const etag = normaliseEtag(header(res, 'etag') ?? '');
  if (res.status === 304) {
    dropBody(res);
    // Only the etag sent can match; a 304 naming another (or none) breaks that invariant.
    if (etag === undefined || etag !== ifNoneMatch)
      throw new NextcloudError(
        'bad_response',
        `Nextcloud answered "not modified" for '${path}' on instance '${conn.name}' without the etag asked about; nothing was sent`,
      );
    return { unchanged: true, etag };
  }
  // Security: only a file's GET carries an ETag (Nextcloud's is the file's getetag); a
  // folder's GET answers 200 with an HTML page and none. A 200 without one is never
  // handed out as the file's content; stat tells which it is, to say why.
  if (etag === undefined) {
    dropBody(res);
    throw await unverifiable(conn, path, signal);
  }
  const lengthHeader = header(res, 'content-length');
  const size =
    lengthHeader !== undefined && /^\d{1,15}$/.test(lengthHeader) ? Number(lengthHeader) : null;
  const stream = idleStream(res, conn.timeoutMs, (kind) =>
    conn.scrubbed(
      kind === 'timeout'
        ? timeoutError({ instance: conn.name, timeoutMs: conn.timeoutMs, verb: 'GET', path })
        : new NextcloudError(
            'unreachable',
            `the download of '${path}' from instance '${conn.name}' broke off before the end: try again`,
          ),
    ),
  );
  return { unchanged: false, stream, size, etag };
}
