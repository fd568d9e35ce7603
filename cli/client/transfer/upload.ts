/**
 * `push` and `checkin`: upload a local file without ever clobbering, verify what the
 * broker stored, and update the CLI's record of it.
 */
import { blobUrlOf, type ToolAnswer, type TransferClient } from './broker-client.js';
import { BLOB_SHA256_HEADER } from '../../../broker/base/protocol.js';
import { CliError, usageError } from './errors.js';
import type { Outcome } from './output.js';
import { progressFor, type ProgressFactory } from './progress.js';
import { digestFile, FileChangedError, sendFile } from './file-bytes.js';
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

const changedWhileSent = (): CliError =>
  new CliError(
    'verification',
    'the local file changed while it was being uploaded; nothing was written',
    'stop editing the file, then push again',
  );

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
  if (st === undefined) {
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
  // A file with no record at this size cannot be the copy last recorded, so the ticket
  // call need not wait for its hash: both run at once, and the hash is declared on the
  // blob PUT instead (BLOB_SHA256_HEADER). Otherwise the hash decides first whether
  // anything is uploaded at all.
  const early = entry === undefined || entry.size !== st.size;
  const [local, earlyTicket] = await Promise.all([
    digestFile(plan.file),
    early ? ask({ size: st.size }) : undefined,
  ]);
  if (early && local.size !== st.size) throw changedWhileSent();
  // What the CLI itself recorded says these exact bytes are the remote version it last
  // saw: uploading them again would only make a new version of the same content.
  const unedited = entry?.sha256 === local.sha256 && entry.size === local.size;
  if (opts.mode === 'push' && unedited) {
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
      etag: entry.etag,
    };
  }
  // A checked-out file that was not edited: checking it in only has to end the checkout
  // (uploading the same bytes would only make a new version of the same content).
  if (opts.mode === 'checkin' && unedited && entry.lock_token !== undefined) {
    opts.warn?.(
      'the file is unchanged since its checkout: nothing was uploaded (no new version); the lock is released',
    );
    const released = await release({ ...entry, lock_token: entry.lock_token }, 'unchanged');
    return { ...released, unlocked: true };
  }

  // Security: the broker commits only a body with the declared hash (in the call, or on
  // the PUT), so a file that changes while it is sent never becomes the remote file. A
  // broker that takes no declaration on the PUT gets the call again, with the hash.
  const declaresOnPut = earlyTicket?.sha256_header === BLOB_SHA256_HEADER;
  const ticket = declaresOnPut
    ? earlyTicket
    : await ask({ size: local.size, sha256: local.sha256 });
  const blobUrl = blobUrlOf(ticket);

  // Counted, not hashed again: the broker commits only a body with the declared sha256,
  // and its answer's sha256 is compared with ours below, so a file edited while it is
  // sent is refused there (each byte is hashed once here, not twice).
  const progress = (opts.progress ?? progressFor)(opts.mode, local.size);
  let stored: Awaited<ReturnType<TransferClient['upload']>>;
  try {
    stored = await client.upload(
      blobUrl,
      (request) =>
        sendFile(plan.file, request, local.size, (n) => progress.add(n)).catch((error: unknown) => {
          // Security: a file that grew or shrank since it was hashed is cut mid-body,
          // so the broker commits nothing.
          if (!(error instanceof FileChangedError)) throw error;
          throw changedWhileSent();
        }),
      local.size,
      declaresOnPut ? local.sha256 : undefined,
    );
  } finally {
    progress.stop();
  }
  // Security: the upload counts only when the broker stored exactly the bytes we hashed.
  if (stored.sha256 !== local.sha256 || stored.size !== local.size) {
    throw new CliError(
      'verification',
      `verification failed: the broker stored ${String(stored.size)} bytes with sha256 ${String(stored.sha256)}, the local file has ${local.size} bytes with sha256 ${local.sha256}`,
      'treat the remote copy as corrupt: fetch it to inspect, then push again',
    );
  }
  const etag = str(stored.etag);
  return recordStaged(
    state,
    {
      instance: target.instance,
      path: target.path,
      local_path: plan.file,
      sha256: local.sha256,
      size: local.size,
      etag,
    },
    opts.mode === 'checkin' ? 'checked_in' : 'pushed',
  );
}
