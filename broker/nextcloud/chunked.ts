/**
 * Chunked upload v2 with its final `MOVE` as the one commit point (observed on Nextcloud
 * 29, docs/nextcloud-behaviour.md "Chunked upload"):
 *
 *   MKCOL  uploads/<user>/<id>           Destination: the file
 *   PUT    uploads/<user>/<id>/1 … N      Destination, OC-Total-Length
 *   (beforeCommit: the caller checks the body and the grants)
 *   MOVE   uploads/<user>/<id>/.file      Destination, OC-Total-Length, X-Hash: sha1,
 *                                         and the destination's condition
 *
 * `If-Match` / `If-None-Match` on that `MOVE` are checked against `.file`, not the
 * destination (always 412), so the condition goes into `Overwrite: F` (create) or a
 * tagged `If: <destination> (<token> ["etag"])` (replace, under a lock or not).
 * Chunk names are 1…N and every chunk but the last is `chunkSize` long, which also suits
 * the object-store variant of the protocol.
 *
 * Only the `MOVE` asks for Nextcloud's hash: of the assembled file, as it writes it, which
 * the caller compares with its own hash of the whole body, taken before the body was cut
 * into chunks. A chunk's own hash would check only the bytes between here and Nextcloud,
 * already sealed by TCP and TLS, not the cutting; and Nextcloud hashing every byte twice
 * (chunk, then file) was the largest part of its CPU for a replacement.
 *
 * Security decisions, each marked below: the destination is untouched until the MOVE;
 * the upload folder is deleted after every failure, so no half upload can be committed
 * later; chunk PUTs are cut by the signal in flight (they change nothing visible).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChunkAnswers } from './chunk-answers.js';
import { ChunkCutter } from './chunk-cutter.js';
import type { NextcloudConnection } from './connection.js';
import { NextcloudError, type StatusContext } from './errors.js';
import { discard } from './http.js';
import { buildUploadUrl } from './url.js';
import {
  committed,
  type Precondition,
  VERIFY_HASH,
  type UploadOptions,
  type Written,
} from './upload-terms.js';

/** Nextcloud's limit on the number of chunks (object-store uploads). */
export const MAX_CHUNKS = 10_000;
/** How long the MOVE may take per byte on top of the timeout: the server assembles the file. */
export const ASSEMBLY_MS_PER_MIB = 100;

/** The destination's condition as the MOVE carries it. */
function commitHeaders(pre: Precondition, destination: URL): Record<string, string> {
  if (pre.write === 'create') return { overwrite: 'F' };
  const token = pre.lockToken === undefined ? [] : [`<${pre.lockToken}>`];
  const etag = pre.etag === undefined ? [] : [`[${pre.etag}]`];
  return { if: `<${destination.href}> (${[...token, ...etag].join(' ')})` };
}

export async function chunkedUpload(
  conn: NextcloudConnection,
  path: string,
  destination: URL,
  body: Readable,
  pre: Precondition,
  size: number,
  options: UploadOptions,
): Promise<Written> {
  const { chunkSize, signal } = options;
  const count = Math.max(1, Math.ceil(size / chunkSize));
  if (count > MAX_CHUNKS)
    throw new NextcloudError(
      'invalid_argument',
      `'${path}' would need ${count} chunks (Nextcloud allows ${MAX_CHUNKS}): ask the owner to raise transfer.chunk_size`,
    );
  const id = `broker-${randomUUID()}`;
  const at = (name?: string): URL =>
    buildUploadUrl(conn.instance.url, conn.instance.username, id, name);
  const ctx: StatusContext = { verb: 'PUT', instance: conn.name, path, write: pre.write };
  const common = { destination: destination.href, 'oc-total-length': String(size) };

  await conn.exchange(
    { method: 'MKCOL', url: at(), headers: { destination: destination.href } },
    { idempotent: false, ok: [201], ctx: { verb: 'MKCOL', instance: conn.name, path }, signal },
  );
  let committing = false;
  // Cuts the chunks still in flight once one of them failed.
  const cutOthers = new AbortController();
  const chunkSignal =
    signal === undefined ? cutOthers.signal : AbortSignal.any([signal, cutOthers.signal]);
  const answers = new ChunkAnswers(cutOthers);
  try {
    const cutter = new ChunkCutter(body);
    for (let n = 1; n <= count; n += 1) {
      const length = n < count ? chunkSize : size - chunkSize * (count - 1);
      const piece = cutter.piece(length);
      const sent = once(piece.stream, 'end');
      const answer = (async () => {
        const res = await conn.call(
          {
            method: 'PUT',
            url: at(String(n)),
            headers: { ...common, 'content-type': 'application/octet-stream' },
            body: piece.stream,
            contentLength: length,
          },
          // Security: never retried (the body is consumed); cut at once by a grant that
          // ends, since a chunk changes nothing at the destination.
          {
            idempotent: false,
            interruptible: true,
            ok: [201, 204],
            ctx,
            deadline: false,
            signal: chunkSignal,
          },
        );
        discard(res);
      })();
      // The next chunk starts as soon as this one's bytes are on their way; its answer
      // (Nextcloud writes and hashes the chunk) is awaited alongside.
      await answers.add(answer, sent);
    }
    await answers.all();
    await cutter.end().catch(() => {
      throw new NextcloudError(
        'aborted',
        `the upload of '${path}' to instance '${conn.name}' was longer than its size: nothing was replaced; send it again`,
      );
    });
    // Security: the one commit point. Nothing reaches the destination before the caller
    // has checked the whole body and the grants.
    await options.beforeCommit?.();
    committing = true;
    const res = await conn.call(
      {
        method: 'MOVE',
        url: at('.file'),
        headers: { ...common, 'x-hash': VERIFY_HASH, ...commitHeaders(pre, destination) },
      },
      {
        idempotent: false,
        ok: [201, 204],
        ctx,
        deadline: false,
        idleTimeoutMs: conn.timeoutMs + Math.ceil(size / 2 ** 20) * ASSEMBLY_MS_PER_MIB,
        signal,
      },
    );
    discard(res);
    return { ...committed(res), chunked: true };
  } catch (thrown) {
    // The first failure is the cause; the chunks it cut fail as cancelled after it.
    const error = answers.failure ?? thrown;
    cutOthers.abort();
    await answers.settled();
    // Security: a refused, cut or failed upload leaves no folder that could be committed.
    await removeFolder(conn, at(), path);
    throw committing ? replacedTargetGone(error, pre, path, conn.name) : error;
  }
}

/**
 * Waits before each repeat of an upload folder's DELETE. Nextcloud 29 answers 403 (and
 * keeps the folder) to a DELETE that meets the cleanup of the chunk PUT just cut; a
 * repeat about 100 ms later succeeds (docs/nextcloud-behaviour.md "The upload folder's
 * life"). About 4 s in all, so a busy server has time to finish that cleanup.
 */
export const FOLDER_DELETE_RETRY_MS: readonly number[] = [100, 250, 500, 1000, 2000];

/** Answers that mean "not now" for an upload folder's DELETE (a cut chunk still held). */
const RETRIED_DELETE_STATUSES: ReadonlySet<number> = new Set([403, 423]);

/** Deletes an upload folder; a failure is logged (Nextcloud's own job removes it in a day). */
async function removeFolder(conn: NextcloudConnection, folder: URL, path: string): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      // Not under the operation's signal: a grant that ended must not keep the folder.
      const res = await conn.call(
        { method: 'DELETE', url: folder, headers: {} },
        {
          idempotent: true,
          ok: [204, 404],
          ctx: { verb: 'DELETE', instance: conn.name, path },
          deadline: true,
        },
      );
      discard(res);
      return;
    } catch (error) {
      const wait = FOLDER_DELETE_RETRY_MS[attempt];
      // Security: a folder kept by a racing cleanup is deleted on a repeat, so no half
      // upload stays on the server where a later MOVE could commit it. Only a refusal is
      // repeated: a server that is down has had the connection's own retry.
      if (
        wait !== undefined &&
        error instanceof NextcloudError &&
        error.status !== undefined &&
        RETRIED_DELETE_STATUSES.has(error.status)
      ) {
        await sleep(wait);
        continue;
      }
      conn.logger.warn('could not delete an upload folder; Nextcloud removes it within a day', {
        instance: conn.name,
        attempts: attempt + 1,
        error: conn.scrubbed(error).message,
      });
      return;
    }
  }
}

/** A replacing MOVE whose destination is gone answers 404: say that, not "missing parent". */
function replacedTargetGone(
  error: unknown,
  pre: Precondition,
  path: string,
  instance: string,
): unknown {
  if (!(error instanceof NextcloudError) || error.status !== 404 || pre.write === 'create')
    return error;
  return new NextcloudError(
    'precondition_failed',
    `'${path}' no longer exists on instance '${instance}' (deleted or moved since it was read): read it again, or create it`,
    { status: 404 },
  );
}
