/**
 * `push` and `checkin`: upload a local file without ever clobbering, verify what the
 * broker stored, and update the CLI's record of it.
 */
import type { ToolAnswer, TransferClient } from './broker-client.js';
import { BLOB_SHA256_AT_END_HEADER, BLOB_SHA256_HEADER } from '../../../broker/base/protocol.js';
import { CliError, usageError } from './errors.js';
import type { Outcome } from './output.js';
import type { ProgressFactory } from './progress.js';
import { type Digest, digestFile } from './file-bytes.js';
import { sameStamp, stampOf } from './file-stamp.js';
import { changedWhileSent, sendDeclared, sendHashing, type Sent } from './upload-send.js';
import { checkTarget } from './staging.js';
import { noteLegacyManifests, planLocal } from './local-path.js';
import { recordStaged, type StagedRecord, type StateStore } from './state.js';
import type { RemoteTarget } from './target.js';

export interface UploadOptions {
  readonly client: TransferClient;
  readonly stageRoot: string;
  readonly state: StateStore;
  readonly target: RemoteTarget;
  readonly local?: string;
  readonly mode: 'push' | 'checkin';
  readonly abandon?: boolean;
  /** A note for the person or agent running the command (stderr and `warnings`). */
  readonly warn?: (note: string) => void;
  /** How the transfer shows progress (default: the bar on a terminal's stderr). */
  readonly progress?: ProgressFactory;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export async function upload(opts: UploadOptions): Promise<Outcome> {
  const { client, target, state } = opts;
  await state.check();
  const entry = await state.get(target.instance, target.path);
  // Without LOCAL, the file goes up from where the CLI last staged it.
  const plan = await planLocal(target, opts.stageRoot, state.dir, opts.local ?? entry?.local_path);
  await noteLegacyManifests(opts.stageRoot, plan, state.dir, opts.warn);
  const name = `${target.instance}:${target.path}`;

  if (opts.mode === 'checkin' && entry?.lock_token === undefined) {
    throw usageError(
      `${name} is not checked out (the CLI has no record of a checkout in ${state.dir})`,
      `run \`broker checkout ${name}\` first`,
    );
  }
  if (opts.mode === 'push' && entry?.lock_token !== undefined) {
    throw usageError(
      `${name} is checked out; a plain push would fail against the lock`,
      'run `broker checkin` to upload under the lock',
    );
  }
  /** Releases the checkout's lock without uploading, and records the file as unlocked. */
  const release = async (locked: StagedRecord & { lock_token: string }, status: string) => {
    const released = await client.call('checkin', {
      instance: target.instance,
      path: target.path,
      lock_token: locked.lock_token,
      abandon: true,
    });
    // The unlock changed the file's etag: keep the one the broker read after it (null
    // when it could not tell the version, so a later push is refused rather than blind).
    const { lock_token: _released, fetched_at: _at, ...rest } = locked;
    const etag = 'etag' in released ? str(released.etag) : locked.etag;
    return recordStaged(state, { ...rest, etag }, status);
  };
  if (opts.mode === 'checkin' && opts.abandon === true && entry?.lock_token !== undefined)
    return release({ ...entry, lock_token: entry.lock_token }, 'abandoned');

  const st = await checkTarget(plan.file);
  const seen = st === undefined ? undefined : await stampOf(plan.file);
  if (st === undefined || seen === undefined) {
    throw usageError(
      `no local file at ${plan.file}`,
      'fetch or create the file first, or name the local path to upload',
    );
  }
  // Security (of the owner's data): never overwrite silently. A file we never fetched is
  // created only if absent; a fetched one is replaced only if unchanged since (its etag).
  const where = { instance: target.instance, path: target.path };
  const ask = (body: {
    size: number;
    sha256?: string;
  }): Promise<ToolAnswer<'write' | 'checkin'>> => {
    if (opts.mode === 'push') {
      const etag = entry?.etag;
      const condition =
        etag !== undefined && etag !== null ? { if_match: etag } : { if_none_match: '*' as const };
      return client.call('write', { ...where, ...body, ...condition });
    }
    const lockToken = entry?.lock_token;
    // Unreachable: a checkin without a recorded checkout stopped above.
    if (lockToken === undefined) throw new Error('upload: checkin without a lock token');
    return client.call('checkin', { ...where, ...body, lock_token: lockToken });
  };
  // What the CLI itself recorded says these exact bytes are the remote version it last
  // saw: uploading them again would only make a new version of the same content.
  const unedited = (local: Digest): boolean =>
    entry?.sha256 === local.sha256 && entry.size === local.size;
  const answerUnedited = async (local: Digest): Promise<Outcome> => {
    if (opts.mode === 'push') {
      // Security (of what the agent is told): "unchanged" says the remote file is what it
      // pushed, and that it may still push there; ask the broker (a read-only check it
      // audits) instead of answering from the records alone. A grant revoked or expired
      // since is a refusal (exit 3), as the push itself would be.
      const access = await client.call('check_access', {
        instance: target.instance,
        path: target.path,
        mode: 'write',
      });
      const until = str(access.expires_at);
      opts.warn?.(
        `unchanged since the CLI last fetched or pushed it: nothing was uploaded; the write grant still covers ${name}${until === null ? '' : ` (until ${until})`}`,
      );
      return {
        status: 'unchanged',
        local_path: plan.file,
        sha256: local.sha256,
        size: local.size,
        etag: entry?.etag ?? null,
      };
    }
    // A checked-out file that was not edited: checking it in only has to end the checkout
    // (uploading the same bytes would only make a new version of the same content).
    opts.warn?.(
      'the file is unchanged since its checkout: nothing was uploaded (no new version); the lock is released',
    );
    // Unreachable without a lock token: a checkin without a recorded checkout stopped above.
    if (entry?.lock_token === undefined) throw new Error('upload: checkin without a lock token');
    const released = await release({ ...entry, lock_token: entry.lock_token }, 'unchanged');
    return { ...released, unlocked: true };
  };
  const sending = { client, file: plan.file, mode: opts.mode, progress: opts.progress };
  const stored = async (sent: Sent): Promise<Outcome> => {
    // Security: the upload counts only when the broker stored exactly the bytes we hashed.
    const local = sent.local;
    if (sent.stored.sha256 !== local.sha256 || sent.stored.size !== local.size) {
      throw new CliError(
        'verification',
        `verification failed: the broker stored ${String(sent.stored.size)} bytes with sha256 ${String(sent.stored.sha256)}, the local file has ${local.size} bytes with sha256 ${local.sha256}`,
        'treat the remote copy as corrupt: fetch it to inspect, then push again',
      );
    }
    return recordStaged(
      state,
      {
        instance: target.instance,
        path: target.path,
        local_path: plan.file,
        sha256: local.sha256,
        size: local.size,
        etag: str(sent.stored.etag),
        // As it was before it was read: a write since makes the next push hash it first.
        stamp: seen.stamp,
      },
      opts.mode === 'checkin' ? 'checked_in' : 'pushed',
    );
  };

  // A file whose stamp is the recorded one (or a record from before stamps, at its size)
  // may be the copy last recorded: its hash decides first whether anything goes up.
  const maybeUnedited =
    entry !== undefined &&
    entry.size === seen.size &&
    (entry.stamp === undefined || sameStamp(entry.stamp, seen.stamp));
  if (maybeUnedited) {
    const local = await digestFile(plan.file);
    if (unedited(local)) return answerUnedited(local);
    const ticket = await ask({ size: local.size, sha256: local.sha256 });
    return stored(await sendDeclared(sending, ticket, local, 'call'));
  }
  // Any other file cannot be the copy last recorded at its stamp: the call goes at once,
  // beside the hash, which the upload then declares (BLOB_SHA256_HEADER).
  const hashing = digestFile(plan.file);
  hashing.catch(() => undefined); // awaited below; a failed call must not leave it unhandled
  const ticket = await ask({ size: seen.size });
  if (ticket.sha256_at_end === BLOB_SHA256_AT_END_HEADER) {
    // Sent while it is hashed; the hash follows the last byte, at the body's end.
    const sent = await sendHashing(sending, ticket, seen.size, hashing, unedited);
    return 'unedited' in sent ? answerUnedited(sent.unedited) : stored(sent);
  }
  // A broker before the hash at the end: the hash first, on the PUT's header, or (before
  // that too) in the call again.
  const local = await hashing;
  if (local.size !== seen.size) throw changedWhileSent();
  if (unedited(local)) return answerUnedited(local);
  if (ticket.sha256_header === BLOB_SHA256_HEADER)
    return stored(await sendDeclared(sending, ticket, local, 'header'));
  const again = await ask({ size: local.size, sha256: local.sha256 });
  return stored(await sendDeclared(sending, again, local, 'call'));
}
