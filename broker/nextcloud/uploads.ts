/**
 * Uploads with one commit point (docs/nextcloud-behaviour.md, "An overwriting PUT is not
 * atomic" and "Chunked upload"). Nextcloud writes a new file through a hidden part file
 * (a cut upload leaves nothing) but streams an overwrite straight onto the live file (a
 * cut one truncates it). So:
 *
 * - a **new** file up to `chunkSize` is one create-only `PUT` whose last bytes are held
 *   back until `beforeCommit` has passed: the server stores nothing before it has them;
 * - a **replacement** (any size) and a new file above `chunkSize` go through chunked
 *   upload v2 (chunked.ts): the chunks land in an upload folder, and one `MOVE` of its
 *   `.file`, sent only after `beforeCommit` passed, is the commit.
 *
 * Every upload asks Nextcloud for the sha256 of what it stored (`X-Hash: sha256`); the
 * answer (`sha256`, null when the server did not say) is for the caller to compare.
 * Security decisions, each marked below: every write is conditional; an upload is never
 * retried; nothing reaches the destination before `beforeCommit` allowed it.
 */
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { NEXTCLOUD_MAX_UPLOAD_NAME_BYTES } from '../base/limits.js';
import { chunkedUpload } from './chunked.js';
import type { NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { discard, type HttpResponse } from './http.js';
import {
  answeredEtag,
  answeredSha256,
  precondition,
  type UploadOptions,
  type WriteCondition,
  type Written,
} from './upload-terms.js';

export type { UploadOptions, WriteCondition, Written } from './upload-terms.js';

/**
 * Upload `body` (exactly `size` bytes) to `path` under `cond`, committing once (see the
 * top of this file). Never retried; on failure the body may be partly read.
 */
export async function upload(
  conn: NextcloudConnection,
  path: string,
  body: Readable,
  cond: WriteCondition,
  size: number,
  options: UploadOptions,
): Promise<Written> {
  const url = conn.url(path);
  const name = path.split('/').pop() ?? '';
  if (Buffer.byteLength(name, 'utf8') > NEXTCLOUD_MAX_UPLOAD_NAME_BYTES)
    throw new NextcloudError(
      'name_too_long',
      `'${name.slice(0, 40)}…' is too long to upload (Nextcloud fails names from ${NEXTCLOUD_MAX_UPLOAD_NAME_BYTES + 1} bytes): choose a shorter name`,
    );
  if (!Number.isSafeInteger(size) || size < 0)
    throw new NextcloudError('invalid_argument', 'the size must be a non-negative integer');
  if (!Number.isSafeInteger(options.chunkSize) || options.chunkSize < 1)
    throw new NextcloudError('invalid_argument', 'the chunk size must be a positive integer');
  const pre = precondition(cond);
  // Security: only a new file may be one PUT (Nextcloud writes it through a part file);
  // a replacement would be written in place, so it commits through a chunked MOVE.
  if (pre.write !== 'create' || size > options.chunkSize)
    return chunkedUpload(conn, path, url, body, pre, size, options);
  return createWithPut(conn, path, url, body, size, options);
}

/** One create-only PUT whose last bytes wait for `beforeCommit`. */
async function createWithPut(
  conn: NextcloudConnection,
  path: string,
  url: URL,
  body: Readable,
  size: number,
  options: UploadOptions,
): Promise<Written> {
  const gate = new CommitGate(options.beforeCommit);
  // An empty body gives the server nothing to wait for: the check comes before the PUT.
  if (size === 0) await gate.pass();
  // A body that fails or closes early fails the gate, which cuts the request.
  pipeline(body, gate, () => undefined);
  let res: HttpResponse;
  try {
    // Security: never retried — the body stream is consumed by the first attempt.
    res = await conn.call(
      {
        method: 'PUT',
        url,
        headers: {
          'content-type': 'application/octet-stream',
          'if-none-match': '*',
          'x-hash': 'sha256',
        },
        body: gate,
        contentLength: size,
        expectContinue: true,
      },
      {
        idempotent: false,
        ok: [200, 201, 204],
        ctx: { verb: 'PUT', instance: conn.name, path, write: 'create' },
        deadline: false,
        signal: options.signal,
      },
    );
  } catch (error) {
    gate.destroy();
    // The gate refused: the PUT was cut before its last bytes, so nothing was stored.
    if (gate.refusal !== undefined) throw gate.refusal.error;
    throw error;
  }
  discard(res);
  return { etag: answeredEtag(res), sha256: answeredSha256(res), chunked: false };
}

/**
 * Passes a body through but holds back its last chunk until `check` has passed: until
 * then the server is missing bytes and commits nothing. A failed check fails the stream
 * (which cuts the request) and is kept in `refusal`.
 */
class CommitGate extends Transform {
  #held: Buffer | undefined;
  #passed = false;
  refusal: { error: unknown } | undefined;

  constructor(private readonly check: (() => void | Promise<void>) | undefined) {
    super();
  }

  /** Runs the check once; throws (and keeps) its refusal. */
  async pass(): Promise<void> {
    if (this.#passed) return;
    try {
      await this.check?.();
      this.#passed = true;
    } catch (error) {
      this.refusal = { error };
      throw error;
    }
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const previous = this.#held;
    this.#held = chunk;
    done(null, previous);
  }

  override _flush(done: TransformCallback): void {
    this.pass().then(
      () => done(null, this.#held),
      (error: unknown) => done(error instanceof Error ? error : new Error('upload refused')),
    );
  }
}
