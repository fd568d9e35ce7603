/**
 * `fetch` and `checkout`: stage a remote file locally, verified against what the broker
 * streamed, and record it in the CLI's state.
 */
import {
  blobUrlOf,
  type BlobStream,
  type ToolAnswer,
  type TransferClient,
} from './broker-client.js';
import { CliError } from './errors.js';
import type { Outcome } from './output.js';
import { progressFor, type Progress, type ProgressFactory } from './progress.js';
import { isQuotedEtag } from '../../../broker/base/etag.js';
import { digestFile } from './file-bytes.js';
import { stampOf } from './file-stamp.js';
import { checkTarget, inspectFolders, stageFile } from './staging.js';
import { noteLegacyManifests, planLocal } from './local-path.js';
import { recordStaged, type StateStore } from './state.js';
import type { RemoteTarget } from './target.js';

export interface DownloadOptions {
  readonly client: TransferClient;
  readonly stageRoot: string;
  readonly state: StateStore;
  readonly target: RemoteTarget;
  readonly local?: string;
  readonly force: boolean;
  readonly mode: 'fetch' | 'checkout';
  /** A note for the person or agent running the command (stderr and `warnings`). */
  readonly warn?: (note: string) => void;
  /** How the transfer shows progress (default: the bar on a terminal's stderr). */
  readonly progress?: ProgressFactory;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export async function download(opts: DownloadOptions): Promise<Outcome> {
  const { client, target, state } = opts;
  await state.check();
  const plan = await planLocal(target, opts.stageRoot, state.dir, opts.local);
  await noteLegacyManifests(opts.stageRoot, plan, state.dir, opts.warn);
  const entry = await state.get(target.instance, target.path);
  // Read-only until the broker says yes: a refusal leaves nothing behind.
  await inspectFolders(plan);
  const existing = await checkTarget(plan.file);
  const local = existing === undefined ? undefined : await digestFile(plan.file);
  // The record vouches for the file it was made for, at the path it was staged to.
  const staged = entry !== undefined && entry.local_path === plan.file;
  const editedLocally = local !== undefined && (!staged || entry.sha256 !== local.sha256);
  // Security (of the user's work): never silently overwrite a local edit or a file the
  // broker did not stage.
  if (editedLocally && !opts.force) {
    const name = `${target.instance}:${target.path}`;
    throw new CliError(
      'clobber',
      staged
        ? `${plan.file} was edited locally since it was fetched`
        : `a local file that broker did not stage exists at ${plan.file}`,
      // The next step names what works for this file: a checked-out file is uploaded with
      // checkin (push is refused for it), an unknown local file is not ours to upload.
      !staged
        ? 'move that file away or give another local path, or rerun with --force to replace it'
        : entry.lock_token !== undefined
          ? `check your change in first (\`broker checkin ${name}\`; a checked-out file cannot be pushed), or rerun with --force to replace the local file`
          : `push your change first (\`broker push ${name}\`), or rerun with --force to replace the local file`,
      { local_path: plan.file },
    );
  }
  if (entry?.lock_token !== undefined && opts.mode === 'checkout') {
    throw new CliError(
      'usage',
      `${target.instance}:${target.path} is already checked out (to ${entry.local_path})`,
      'edit that file, then run `broker checkin` (or `broker checkin --abandon`)',
      { local_path: entry.local_path },
    );
  }

  const where = { instance: target.instance, path: target.path };
  const ticket: ToolAnswer<'checkout' | 'read'> =
    opts.mode === 'checkout'
      ? await client.call('checkout', where)
      : await client.call('read', where);
  // A broker before the one-request fetch answers the etag here; a newer one answers null
  // and the etag comes with the bytes (the blob GET's ETag).
  const remoteEtag = str(ticket.etag);
  const lockToken = str(ticket.lock_token);
  // The local copy is the staged one, unedited: the record's etag names its version.
  const held =
    opts.mode === 'fetch' &&
    local !== undefined &&
    !editedLocally &&
    entry !== undefined &&
    entry.etag !== null
      ? { etag: entry.etag, ...local }
      : undefined;
  const unchanged = (current: NonNullable<typeof held>): Outcome => ({
    status: 'unchanged',
    local_path: plan.file,
    sha256: current.sha256,
    size: current.size,
    etag: current.etag,
  });
  if (held !== undefined && held.etag === remoteEtag) return unchanged(held);

  let blob: BlobStream | undefined;
  let progress: Progress | undefined;
  try {
    const answer = await client.download(
      blobUrlOf(ticket),
      // Security: only a well-formed etag goes into the header (the record is a file on
      // this host); with anything else the whole file comes again.
      held !== undefined && isQuotedEtag(held.etag) ? held.etag : undefined,
    );
    // The broker found the local copy current (304): nothing was transferred.
    if (answer.unchanged) {
      // Only a download that named the copy's etag is ever answered so (client.download).
      if (held === undefined) throw new Error('download: "unchanged" for a copy never named');
      return unchanged(held);
    }
    blob = answer;
    // From the tool's answer (a broker before the one-request fetch), else the blob's head.
    const expectedSize = typeof ticket.size === 'number' ? ticket.size : answer.size;
    const bar = (opts.progress ?? progressFor)(opts.mode, expectedSize);
    progress = bar;
    const file = await stageFile(
      plan,
      (open) => answer.save(open),
      (got, streamed) => {
        // Security: rename into place only when what arrived is exactly what the broker sent.
        if (
          got.sha256 !== streamed.sha256 ||
          got.size !== streamed.size ||
          (expectedSize !== null && got.size !== expectedSize)
        ) {
          throw new CliError(
            'verification',
            `verification failed: received ${got.size} bytes with sha256 ${got.sha256}, the broker sent ${streamed.size} bytes with sha256 ${streamed.sha256}`,
            'the corrupt copy was discarded; retry, and if it repeats treat the file or the connection as corrupt',
          );
        }
      },
      (n) => bar.add(n),
    );
    bar.stop();
    // Taken after the rename (which changes the file's ctime); a write since only makes
    // the next push hash the file before it calls (file-stamp.ts).
    const landed = await stampOf(plan.file);
    // A fetch keeps a checkout's lock token: the lock is the remote file's, wherever the copy is.
    const keptLock = lockToken ?? (opts.mode === 'fetch' ? (entry?.lock_token ?? null) : null);
    const record = {
      instance: target.instance,
      path: target.path,
      local_path: plan.file,
      sha256: file.digest.sha256,
      size: file.digest.size,
      // The etag the tool answered (for a checkout, the one Nextcloud gave under the
      // lock), else the one that came with the bytes.
      etag: remoteEtag ?? answer.etag,
      ...(keptLock !== null ? { lock_token: keptLock } : {}),
      ...(landed === undefined ? {} : { stamp: landed.stamp }),
    };
    const result = await recordStaged(
      state,
      record,
      opts.mode === 'checkout' ? 'checked_out' : 'fetched',
    ).catch(async (error: unknown) => {
      await file.undo();
      throw error;
    });
    return opts.mode === 'checkout' ? { ...result, locked: true } : result;
  } catch (err) {
    progress?.stop();
    blob?.discard();
    if (opts.mode === 'checkout' && lockToken !== null) {
      // Do not leave a lock behind that nobody holds a record of.
      await client
        .call('checkin', {
          instance: target.instance,
          path: target.path,
          lock_token: lockToken,
          abandon: true,
        })
        .catch(() => undefined);
    }
    throw err;
  }
}
