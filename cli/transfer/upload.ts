/**
 * `push` and `checkin`: upload a local file without ever clobbering, verify what the
 * broker stored, and update the manifest.
 */
import { Transform } from 'node:stream';
import { createHash } from 'node:crypto';
import { ExitCode } from '../command.js';
import { blobUrlOf, type TransferClient } from './broker-client.js';
import { CliError, usageError } from './errors.js';
import { Manifest, recordStaged } from './manifest.js';
import type { Outcome } from './output.js';
import { progressFor } from './progress.js';
import { checkTarget, digestFile, openLocalFile, planLocal } from './staging.js';
import type { RemoteTarget } from './target.js';

export interface UploadOptions {
  readonly client: TransferClient;
  readonly stageRoot: string;
  readonly target: RemoteTarget;
  readonly local?: string;
  readonly mode: 'push' | 'checkin';
  readonly abandon?: boolean;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export async function upload(opts: UploadOptions): Promise<Outcome> {
  const { client, target } = opts;
  const plan = await planLocal(target, opts.stageRoot, opts.local);
  const manifest = await Manifest.load(plan.root);
  const entry = manifest.get(target.instance, target.path);

  if (opts.mode === 'checkin' && entry?.lock_token === undefined) {
    throw usageError(
      `${target.instance}:${target.path} is not checked out from ${plan.root}`,
      'run `broker checkout` first (or name the same local path you checked out to)',
    );
  }
  if (opts.mode === 'push' && entry?.lock_token !== undefined) {
    throw usageError(
      `${target.instance}:${target.path} is checked out; a plain push would fail against the lock`,
      'run `broker checkin` to upload under the lock',
    );
  }
  if (opts.mode === 'checkin' && opts.abandon === true && entry?.lock_token !== undefined) {
    const released = await client.call('checkin', {
      instance: target.instance,
      path: target.path,
      lock_token: entry.lock_token,
      abandon: true,
    });
    // The unlock changed the file's etag: keep the one the broker read after it (null
    // when it could not tell the version, so a later push is refused rather than blind).
    const { lock_token: _released, ...rest } = entry;
    const etag = 'etag' in released ? str(released.etag) : entry.etag;
    manifest.set({ ...rest, etag });
    await manifest.save();
    return {
      status: 'abandoned',
      local_path: plan.file,
      sha256: entry.sha256,
      size: entry.size,
      etag,
    };
  }

  const st = await checkTarget(plan.file);
  if (st === undefined) {
    throw usageError(
      `no local file at ${plan.file}`,
      'fetch or create the file first, or name the local path to upload',
    );
  }
  const local = await digestFile(plan.file);

  // Security (of the owner's data): never overwrite silently. A file we never fetched is
  // created only if absent; a fetched one is replaced only if unchanged since (its etag).
  const condition =
    opts.mode === 'checkin'
      ? { lock_token: entry?.lock_token }
      : entry?.etag !== undefined && entry.etag !== null
        ? { if_match: entry.etag }
        : { if_none_match: '*' };
  const ticket = await client.call(opts.mode === 'checkin' ? 'checkin' : 'write', {
    instance: target.instance,
    path: target.path,
    size: local.size,
    ...condition,
  });
  const blobUrl = blobUrlOf(ticket);

  const sentHash = createHash('sha256');
  let sentSize = 0;
  const progress = progressFor(opts.mode, local.size);
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sentHash.update(chunk);
      sentSize += chunk.length;
      progress.add(chunk.length);
      done(null, chunk);
    },
  });
  let stored: Awaited<ReturnType<TransferClient['upload']>>;
  try {
    stored = await client.upload(
      blobUrl,
      (await openLocalFile(plan.file)).pipe(counter),
      local.size,
    );
  } finally {
    progress.stop();
  }
  const sent = sentHash.digest('hex');
  // Security: the upload counts only when the broker stored exactly the bytes we hashed.
  if (sent !== local.sha256 || sentSize !== local.size) {
    throw new CliError(
      ExitCode.verification,
      'the local file changed while it was being uploaded',
      'stop editing the file, then push again',
    );
  }
  if (stored.sha256 !== local.sha256 || stored.size !== local.size) {
    throw new CliError(
      ExitCode.verification,
      `verification failed: the broker stored ${String(stored.size)} bytes with sha256 ${String(stored.sha256)}, the local file has ${local.size} bytes with sha256 ${local.sha256}`,
      'treat the remote copy as corrupt: fetch it to inspect, then push again',
    );
  }
  const etag = str(stored.etag);
  return recordStaged(
    manifest,
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
