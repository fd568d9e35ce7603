/**
 * File content over WebDAV: a download (GET), streamed and never buffered. Uploads are
 * uploads.ts. Security decisions, each marked below: only files are read, and only the
 * version just checked.
 */
import type { Readable } from 'node:stream';
import { header, type NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { idleStream } from './http.js';

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
