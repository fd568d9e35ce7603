/**
 * The step of a blob upload (blobs.ts): stream the body through a hash to Nextcloud and
 * let it commit once (nextcloud/uploads.ts), only after the whole body arrived, matched
 * the sha256 the client declared, and the pipeline's check passed again. What Nextcloud
 * stored is verified through its own hash of it (`X-Hash-SHA1`, see VERIFY_HASH), which
 * the broker compares with its own sha1 of the body; only a server that does not answer
 * one, or answers another, gets the file read back (then the sha256 of what it holds
 * decides), and the answer says so.
 *
 * The answer says exactly what is on the server: a refusal, a cut or a mismatch before
 * the commit leaves the destination unchanged (and says so); a mismatch after it says
 * the destination now holds other bytes. Nextcloud's own answer, even while the body is
 * still coming, ends the upload at once: a full quota (507) or someone else's lock (423)
 * as a refusal naming that cause, anything else as the error it is.
 */
import { pipeline as pipe } from 'node:stream/promises';
import { failure, refused } from '../base/envelope.js';
import { SHA256_AT_END_BYTES, SHA256_HEX } from '../base/protocol.js';
import type { Readable } from 'node:stream';
import { digestStream, HashingStream } from './hashing.js';
import { GrantEndedError } from './in-flight.js';
import { OperationRefusal, type Allowed } from './pipeline.js';
import type { SpaceGuard } from './space-guard.js';
import type { Reservation } from './space-ledger.js';
import type { NextcloudPort } from './ports.js';
import type { Ticket } from './tickets.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { ENDED_HINTS, endedCode, endedFields } from './wall-answers.js';

export interface UploadBody {
  readonly body: Readable;
  /** The whole body arrived. */
  readonly complete: boolean;
  /** The client's connection closed: it can no longer hear the answer. */
  readonly gone: boolean;
  /** The body's last SHA256_AT_END_BYTES are the file's sha256, not the file's (protocol.ts). */
  readonly sha256AtEnd?: boolean;
}

export interface Stored {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
  readonly etag: string | null;
  /** The file's id, as the upload's committing answer named it (null: it named none). */
  readonly fileId: string | null;
  /** `nextcloud`: its X-Hash-SHA1 matched; `read_back`: it gave none or another, the file was re-read. */
  readonly verifiedBy: 'nextcloud' | 'read_back';
  readonly chunked: boolean;
  readonly warnings: string[];
}

export const READ_BACK_WARNING =
  'Nextcloud did not answer X-Hash-SHA1 for this upload, so the broker verified it by reading the file back';

export const HASH_DIFFERED_WARNING =
  "Nextcloud's X-Hash-SHA1 for this upload differed from the bytes sent, so the broker read the file back: it holds exactly them";

export function clientGone(path: string): OperationRefusal {
  return new OperationRefusal(
    failure(
      'aborted',
      `the connection closed before the upload finished; nothing was written to "${path}"`,
      true,
    ),
  );
}

/**
 * The sha256 a body declares after the file's bytes, checked: 64 lowercase hex digits,
 * and the same as any declared before the body (`before`). Otherwise a refusal.
 */
function declaredAtEnd(digits: Buffer, before: string | undefined, path: string): string {
  const value = digits.toString('latin1');
  const refusal = (why: string) =>
    new OperationRefusal(
      refused('invalid_arguments', `${why}; nothing was written to "${path}"`, {
        hint: 'send the file, then its sha256 as 64 lowercase hex digits (Content-Length: its size + 64)',
      }),
    );
  if (!SHA256_HEX.test(value))
    throw refusal("the body's last 64 bytes must be the file's sha256 as lowercase hex digits");
  // Security: one declaration per body. Two that differ are refused, never one picked.
  if (before !== undefined && value !== before)
    throw refusal("the sha256 after the file's bytes differs from the one declared before them");
  return value;
}

function endedWords(error: GrantEndedError): string {
  return error.end.state === 'revoked' ? 'was revoked by the owner' : 'expired';
}

function ended(error: GrantEndedError, path: string): OperationRefusal {
  const code = endedCode(error.end);
  return new OperationRefusal(
    refused(
      code,
      `the grant ${endedWords(error)} during the upload; nothing was written to "${path}" (it is unchanged)`,
      { hint: ENDED_HINTS[code], ...endedFields({ ...error.end, grant: error.grantIds[0] }) },
    ),
    error.end.state,
  );
}

/** Stops reading the body (the client gets the answer at once); returns `error`. */
function stopReading(hasher: HashingStream, error: unknown): unknown {
  hasher.destroy();
  return error;
}

/** Whether an upload's failure is Nextcloud's (an answer, or no answer), not the body's. */
function isNextcloudsAnswer(error: unknown): error is NextcloudError {
  return error instanceof NextcloudError && error.code !== 'aborted' && error.code !== 'cancelled';
}

/**
 * Nextcloud's refusals of an upload that retrying as is will not change, as refusals
 * (the CLI exits 3, or 5 for a lock: never 2, "retry later"); anything else as it is.
 */
function nextcloudRefusal(error: NextcloudError, path: string): unknown {
  if (error.code === 'insufficient_storage')
    return new OperationRefusal(
      refused(
        'insufficient_storage',
        `Nextcloud refused the upload of "${path}" with 507 Insufficient Storage (the owner's quota is full); nothing was written to "${path}" (it is unchanged)`,
        { hint: 'ask the owner to free space or raise the quota; do not retry as is' },
      ),
    );
  if (error.code === 'locked')
    return new OperationRefusal(
      refused(
        'locked',
        `Nextcloud refused the upload of "${path}" with 423 Locked: someone else holds a lock on it (a checkout, the web UI, an editor); nothing was written to "${path}" (it is unchanged)`,
        {
          hint: 'ask the owner to release the lock, then fetch the file again and reapply your change',
        },
      ),
    );
  return error;
}

export async function storeUpload(
  space: SpaceGuard,
  client: NextcloudPort,
  allowed: Allowed,
  ticket: Ticket,
  source: UploadBody,
): Promise<Stored> {
  const path = allowed.paths[0] ?? ticket.path;
  // Security: judge the space again right before the upload (the ticket's check may be
  // minutes old; a reading of at most a few seconds is reused, space-readings.ts) and
  // hold this upload's bytes until it has committed or failed: no write may let
  // Nextcloud's expiry delete the trash bin or versions, alone or with the broker's
  // other writes in flight (space-ledger.ts).
  let reservation: Reservation;
  try {
    reservation = await space.reserve(client, allowed, {
      kind: 'upload',
      path,
      bytes: ticket.size ?? 0,
      replaces: !('ifNoneMatch' in (ticket.condition ?? { ifNoneMatch: '*' })),
    });
  } catch (error) {
    // Nextcloud's own refusal of the space read (507: nothing is left) is the same
    // refusal as one mid-body: never "retry later". The body was not read yet: the
    // blob endpoint answers at once (blobs.ts), as for any refusal before it.
    throw isNextcloudsAnswer(error) ? nextcloudRefusal(error, path) : error;
  }
  try {
    return await storeReserved(client, allowed, ticket, source);
  } finally {
    reservation.settle();
  }
}

async function storeReserved(
  client: NextcloudPort,
  allowed: Allowed,
  ticket: Ticket,
  source: UploadBody,
): Promise<Stored> {
  const path = allowed.paths[0] ?? ticket.path;
  const size = ticket.size ?? 0;
  const atEnd = source.sha256AtEnd === true;
  // Security: only the file's bytes go on to Nextcloud, never the declaration after them.
  const hasher = new HashingStream(
    atEnd ? { sha1: true, passOn: size, keep: SHA256_AT_END_BYTES } : { sha1: true },
  );
  // Security: without a precondition the upload is create-only; never a silent overwrite.
  const condition = ticket.condition ?? { ifNoneMatch: '*' as const };
  const beforeCommit = (): void => {
    // Security: a client that can no longer hear the answer gets no commit: it could
    // never learn that the file changed, and would be told nothing or a reset instead.
    if (hasher.bytes !== size || source.gone) throw clientGone(path);
    if (atEnd && hasher.after().length !== SHA256_AT_END_BYTES) throw clientGone(path);
    const sha256 = hasher.sha256();
    const declared = atEnd ? declaredAtEnd(hasher.after(), ticket.sha256, path) : ticket.sha256;
    // Security: a body other than the one the client hashed never becomes the file.
    if (declared !== undefined && sha256 !== declared)
      throw new OperationRefusal(
        failure(
          'verification_failed',
          `the body's sha256 differs from the one declared for it; nothing was written to "${path}"`,
          false,
          { sha256, size, declared_sha256: declared },
        ),
      );
    // Security: the commit point: the grants must hold now, not only when it began.
    allowed.recheck();
  };
  // Settles (never rejects) with what cut the body, if anything did.
  const piping = pipe(source.body, hasher, { signal: allowed.signal }).then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  let written: Awaited<ReturnType<NextcloudPort['upload']>>;
  try {
    written = await client.upload(path, hasher, condition, size, {
      beforeCommit,
      signal: allowed.signal,
    });
  } catch (error) {
    if (error instanceof OperationRefusal) throw stopReading(hasher, error);
    if (error instanceof GrantEndedError) throw stopReading(hasher, ended(error, path));
    if (allowed.signal.aborted && allowed.signal.reason instanceof GrantEndedError)
      throw stopReading(hasher, ended(allowed.signal.reason, path));
    // Security (of the record): Nextcloud's own answer mid-body (507 on a chunk, 423 on
    // the commit, a server gone) ends the upload now, in its words. Waiting for the rest
    // of a body nobody reads any more left the client hanging until the idle timeout,
    // then recorded the cause as a closed connection.
    if (isNextcloudsAnswer(error)) throw stopReading(hasher, nextcloudRefusal(error, path));
    await piping;
    hasher.destroy();
    // The client went away (its body was cut): Nextcloud was left unchanged.
    if (!source.complete) throw clientGone(path);
    throw error;
  }
  if ((await piping) !== undefined) throw clientGone(path);
  const mine = { sha256: hasher.sha256(), size: hasher.bytes };
  const warnings: string[] = written.warning === undefined ? [] : [written.warning];
  let stored = mine;
  let etag = written.etag;
  // Security: Nextcloud's hash of what it received must be the broker's hash of what it
  // sent. Without one, or with another, the file is read back and its sha256 decides, so
  // the answer says exactly what the destination holds (stored_sha256 on a mismatch).
  const verifiedBy = written.sha1 === hasher.sha1() ? 'nextcloud' : 'read_back';
  if (verifiedBy === 'read_back') {
    warnings.push(written.sha1 === null ? READ_BACK_WARNING : HASH_DIFFERED_WARNING);
    ({ stored, etag } = await readBack(client, allowed, path, mine, written.etag));
  }
  if (stored.sha256 !== mine.sha256 || stored.size !== mine.size) {
    throw new OperationRefusal(
      failure(
        'verification_failed',
        `Nextcloud reports other bytes for "${path}" than were sent (sha256 differs): the file on Nextcloud changed and holds them` +
          (ticket.kind === 'checkin'
            ? '; the file stays checked out: `broker checkin` it again'
            : '; `broker push` it again'),
        false,
        {
          stored: true,
          sha256: mine.sha256,
          size: mine.size,
          stored_sha256: stored.sha256,
          stored_size: stored.size,
        },
      ),
    );
  }
  return {
    path,
    ...mine,
    etag,
    fileId: written.fileId,
    verifiedBy,
    chunked: written.chunked,
    warnings,
  };
}

/** The fallback: read what Nextcloud now holds through the same hash. */
async function readBack(
  client: NextcloudPort,
  allowed: Allowed,
  path: string,
  sent: { sha256: string; size: number },
  etag: string | null,
): Promise<{ stored: { sha256: string; size: number }; etag: string | null }> {
  try {
    const back = await client.readStream(path, { signal: allowed.signal });
    const stored = await digestStream(back.stream, allowed.signal);
    return { stored, etag: back.etag ?? etag };
  } catch (error) {
    const end: unknown = allowed.signal.reason;
    if (!allowed.signal.aborted || !(end instanceof GrantEndedError)) throw error;
    // Nothing is lost silently: the bytes are on Nextcloud, so the answer says so,
    // even though the grant ended before they could be read back.
    throw new OperationRefusal(
      refused(
        endedCode(end.end),
        `"${path}" was stored on Nextcloud (${sent.size} bytes), but the grant ${endedWords(end)} before the broker could verify it; the remote file has changed`,
        {
          hint: 'request access again, then `broker fetch` the file to see what Nextcloud holds',
          ...endedFields({ ...end.end, grant: end.grantIds[0] }),
          stored: true,
          sha256: sent.sha256,
          size: sent.size,
          etag,
        },
      ),
      end.end.state,
    );
  }
}
