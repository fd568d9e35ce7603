/**
 * Uploads with one commit point (docs/nextcloud-behaviour.md, "An overwriting PUT is not
 * atomic" and "Chunked upload"). Nextcloud writes a new file through a hidden part file
 * (a cut upload leaves nothing) but streams an overwrite straight onto the live file (a
 * cut one truncates it). So:
 *
 * - a **new** file, at any size, is one create-only `PUT` whose last bytes are held back
 *   until `beforeCommit` has passed: the server stores nothing before it has them;
 * - a **replacement** (any size) goes through chunked upload v2 (chunked.ts): the chunks
 *   land in an upload folder, and one `MOVE` of its `.file`, sent only after
 *   `beforeCommit` passed, is the commit. So does a new file that one PUT cannot carry:
 *   the server (or a proxy before it) answered 413 to its head (the body waits for
 *   `100 Continue`, so nothing was sent), or refused that size before on this instance.
 *   The answer then carries a warning saying so.
 *
 * Every upload asks Nextcloud for its hash of what it stored (`X-Hash: sha1`, see
 * VERIFY_HASH); the answer (`sha1`, null when the server did not say) is for the caller
 * to compare.
 * Security decisions, each marked below: every write is conditional; an upload is never
 * retried; nothing reaches the destination before `beforeCommit` allowed it.
 */
import { once } from 'node:events';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { NEXTCLOUD_MAX_UPLOAD_NAME_BYTES } from '../base/limits.js';
import { ASSEMBLY_MS_PER_MIB, chunkedUpload } from './chunked.js';
import type { NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { discard, type HttpResponse } from './http.js';
import {
  committed,
  precondition,
  type Precondition,
  type UploadOptions,
  VERIFY_HASH,
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
  if (pre.write !== 'create') return chunkedUpload(conn, path, url, body, pre, size, options);
  if (options.putLimit !== undefined && size > options.putLimit) {
    const written = await chunkedUpload(conn, path, url, body, pre, size, options);
    return {
      ...written,
      warning: `the file is larger than transfer.put_limit (${options.putLimit} bytes), so it went up as a chunked upload (slower: Nextcloud writes it twice)`,
    };
  }
  const refusedAt = conn.putRefusedFrom;
  if (refusedAt !== undefined && size >= refusedAt) {
    const written = await chunkedUpload(conn, path, url, body, pre, size, options);
    return { ...written, warning: chunkedWarning(size, refusedAt) };
  }
  return createWithPut(conn, path, url, body, size, options, pre);
}

/** Why a new file went up in chunks: one PUT of its size was refused on this instance. */
function chunkedWarning(size: number, refusedAt: number): string {
  return `the server (or a proxy before it) refused one PUT of ${refusedAt === size ? 'this' : `${refusedAt} bytes, less than this`} size with 413, so the file went up as a chunked upload (slower: Nextcloud writes it twice)`;
}

/** Nextcloud (or a proxy) refused the request's size: 413 Payload Too Large. */
const tooLarge = (error: unknown): boolean =>
  error instanceof NextcloudError && error.status === 413;

/** One create-only PUT whose last bytes wait for `beforeCommit`. */
async function createWithPut(
  conn: NextcloudConnection,
  path: string,
  url: URL,
  body: Readable,
  size: number,
  options: UploadOptions,
  pre: Precondition,
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
          'x-hash': VERIFY_HASH,
        },
        body: gate,
        contentLength: size,
        // The body waits for the server's go-ahead: a 413 to the head leaves it unsent.
        expectContinue: true,
      },
      {
        idempotent: false,
        ok: [200, 201, 204],
        ctx: { verb: 'PUT', instance: conn.name, path, write: 'create' },
        deadline: false,
        // After the last byte Nextcloud hashes the part file and renames it.
        idleTimeoutMs: conn.timeoutMs + Math.ceil(size / 2 ** 20) * ASSEMBLY_MS_PER_MIB,
        signal: options.signal,
      },
    );
  } catch (error) {
    if (tooLarge(error) && gate.unsent()) {
      // One PUT of this size cannot pass: send the same body (none of it left) in chunks,
      // committed by the MOVE after the same check. The gate no longer holds anything back.
      conn.notePutRefused(size);
      gate.passThrough();
      const written = await chunkedUpload(conn, path, url, gate, pre, size, options);
      return { ...written, warning: chunkedWarning(size, size) };
    }
    gate.destroy();
    // The gate refused: the PUT was cut before its last bytes, so nothing was stored.
    if (gate.refusal !== undefined) throw gate.refusal.error;
    throw error;
  }
  discard(res);
  return { ...committed(res), chunked: false };
}

/**
 * Passes a body through but holds back its last chunk until `check` has passed: until
 * then the server is missing bytes and commits nothing. The check waits until the
 * request has taken every byte before that chunk, so it is made as the last bytes leave:
 * a request still waiting for Nextcloud's `100 Continue` (a busy server) is not yet
 * committing, and a grant revoked or a client gone meanwhile is seen. A failed check
 * fails the stream (which cuts the request) and is kept in `refusal`.
 */
class CommitGate extends Transform {
  #held: Buffer | undefined;
  #passed = false;
  refusal: { error: unknown } | undefined;

  readonly #check: (() => void | Promise<void>) | undefined;

  constructor(check: (() => void | Promise<void>) | undefined) {
    super();
    this.#check = check;
  }

  /** Nothing has been read from the gate yet (no request ever took its bytes). */
  unsent(): boolean {
    return this.readableFlowing === null;
  }

  /** Holds nothing back any more: the caller makes its own check before committing. */
  passThrough(): void {
    this.#passed = true;
    this.#passedThrough();
  }

  /** Ends a wait of _flush for the reader (see #drained) once the gate passes through. */
  #passedThrough: () => void = () => undefined;

  /** Runs the check once; throws (and keeps) its refusal. */
  async pass(): Promise<void> {
    if (this.#passed) return;
    try {
      await this.#check?.();
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

  /**
   * Resolves once the reader has taken every byte passed on before the held chunk (its
   * `data` events leave nothing buffered here). Waits for a reader to start first:
   * listening for `data` before one has would start the flow into nobody. The reader is
   * a `pipe` (whose start emits `resume`); any other reads only after passThrough().
   */
  async #drained(): Promise<void> {
    if (this.readableFlowing === null) await once(this, 'resume');
    while (this.readableLength > 0) await once(this, 'data');
  }

  override _flush(done: TransformCallback): void {
    // Security: the commit point is when the last bytes leave, not when the body ended
    // here: the check before it must see a revoke or a departed client up to then.
    const through = new Promise<void>((resolve) => (this.#passedThrough = resolve));
    (this.#passed ? Promise.resolve() : Promise.race([this.#drained(), through]))
      .then(() => this.pass())
      .then(
        () => done(null, this.#held),
        (error: unknown) => done(error instanceof Error ? error : new Error('upload refused')),
      );
  }
}
