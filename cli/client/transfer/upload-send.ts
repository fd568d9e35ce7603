/**
 * The blob PUT of a push or checkin: the file's bytes to the ticket, with the sha256 the
 * broker is to hold them to declared in the call, on the PUT's header, or, for a file
 * still being hashed while it is sent, after its bytes at the body's end (docs/transfer-
 * protocol.md). The two reads of the file (the hash, the bytes sent) are independent, so
 * a file that changes while it is sent makes them differ, and the broker commits nothing.
 */
import type { ClientRequest } from 'node:http';
import { blobUrlOf, type ToolAnswer, type TransferClient } from './broker-client.js';
import type { Envelope } from './envelope.js';
import { CliError } from './errors.js';
import { type Digest, FileChangedError, sendFile } from './file-bytes.js';
import { progressFor, type ProgressFactory } from './progress.js';

/** What a blob PUT needs besides its ticket. */
export interface Sending {
  readonly client: TransferClient;
  readonly file: string;
  readonly mode: 'push' | 'checkin';
  readonly progress?: ProgressFactory | undefined;
}

/** A body the broker stored: the local file's hash and size, and the broker's answer. */
export interface Sent {
  readonly local: Digest;
  readonly stored: Envelope;
}

type Ticket = ToolAnswer<'write' | 'checkin'>;

export const changedWhileSent = (): CliError =>
  new CliError(
    'verification',
    'the local file changed while it was being uploaded; nothing was written',
    'stop editing the file, then push again',
  );

/** One PUT of `size` bytes of the file, ended by `finish` (default: plainly). */
async function put(
  s: Sending,
  ticket: Ticket,
  size: number,
  declare: Parameters<TransferClient['upload']>[3],
  finish?: (request: ClientRequest) => Promise<void>,
): Promise<Envelope> {
  const progress = (s.progress ?? progressFor)(s.mode, size);
  try {
    return await s.client.upload(
      blobUrlOf(ticket),
      (request) =>
        sendFile(s.file, request, size, (n) => progress.add(n), finish).catch((error: unknown) => {
          // Security: a file that grew or shrank since it was hashed is cut mid-body,
          // so the broker commits nothing.
          if (!(error instanceof FileChangedError)) throw error;
          throw changedWhileSent();
        }),
      size,
      declare,
    );
  } finally {
    progress.stop();
  }
}

/**
 * Sends a file already hashed (`local`), its hash declared in the tool call (`call`) or
 * on the PUT (`header`). Counted, not hashed again: the broker commits only a body with
 * the declared sha256.
 */
export async function sendDeclared(
  s: Sending,
  ticket: Ticket,
  local: Digest,
  declared: 'call' | 'header',
): Promise<Sent> {
  const stored = await put(
    s,
    ticket,
    local.size,
    declared === 'header' ? { header: local.sha256 } : undefined,
  );
  return { local, stored };
}

/**
 * Sends `size` bytes of a file while `hashing` reads it through sha256, and declares the
 * hash after them, at the body's end (the ticket names `sha256_at_end`), once both
 * reads are done. When the hash says the file is the copy last recorded after all
 * (`unedited`: its stamp changed, its bytes did not), the PUT is cut before the hash, so
 * the broker commits nothing, and that digest is the result.
 */
export async function sendHashing(
  s: Sending,
  ticket: Ticket,
  size: number,
  hashing: Promise<Digest>,
  unedited: (local: Digest) => boolean,
): Promise<Sent | { readonly unedited: Digest }> {
  // A small file is hashed before the call is answered: then nothing need be sent.
  const early = await Promise.race([hashing, undefined]);
  if (early !== undefined && early.size === size && unedited(early)) return { unedited: early };
  let same: Digest | undefined;
  const finish = async (request: ClientRequest): Promise<void> => {
    const local = await hashing;
    // Security: the hash read another length than was sent: the file changed between
    // the two reads. No hash goes: the cut body is never committed.
    if (local.size !== size) throw changedWhileSent();
    if (unedited(local)) {
      same = local;
      throw new Error('the file is the copy last recorded: the upload is cut before its hash');
    }
    request.end(local.sha256, 'latin1');
  };
  try {
    const stored = await put(s, ticket, size, 'at-end', finish);
    return { local: await hashing, stored };
  } catch (error) {
    // Only the cut this made (the connection it closed) means unedited; a refusal or a
    // verification failure the broker answered first stays what it is.
    if (same !== undefined && (!(error instanceof CliError) || error.code === 'infrastructure'))
      return { unedited: same };
    throw error;
  }
}
