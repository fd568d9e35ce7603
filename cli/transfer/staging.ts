/**
 * Where staged files go on the agent's host, and how they get there.
 *
 * Security: a staged file is written only inside its staging root. The root is the
 * owner's choice; below it no component may be a symlink or a non-directory, the target
 * may not be a symlink, and bytes go to a temp file created exclusively (O_EXCL,
 * O_NOFOLLOW, 0600) in the target folder, renamed into place only after verification.
 */
import { constants, createReadStream, promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable, type Readable } from 'node:stream';
import { CliError, usageError } from './errors.js';
import { ExitCode } from '../command.js';
import type { RemoteTarget } from './target.js';
import { MANIFEST_NAME } from './manifest.js';

export interface LocalPlan {
  /** Folder holding the manifest. */
  readonly root: string;
  /** Absolute path of the staged file. */
  readonly file: string;
}

/**
 * The local path for a remote target: an explicit LOCAL argument wins (a folder
 * receives the remote file name); otherwise `<stageRoot>/<instance>/<path>`.
 */
export async function planLocal(
  target: RemoteTarget,
  stageRoot: string,
  local?: string,
): Promise<LocalPlan> {
  if (local !== undefined) {
    let file = resolve(local);
    const st = await fs.lstat(file).catch(() => undefined);
    if (local.endsWith('/') || (st?.isDirectory() ?? false)) {
      file = join(file, target.components[target.components.length - 1] ?? '');
    }
    // Security: the manifest vouches for staged files; a remote file must never land on it.
    if (basename(file) === MANIFEST_NAME) {
      throw usageError(
        `the local name ${MANIFEST_NAME} is reserved for the staging manifest`,
        'pass another local file name as LOCAL',
      );
    }
    return { root: dirname(file), file };
  }
  const file = resolve(stageRoot, target.instance, ...target.components);
  // Security: the wall already refused `..` and separators; this re-checks the result.
  if (!file.startsWith(resolve(stageRoot) + sep)) {
    throw new CliError(
      ExitCode.refused,
      'path leaves the staging folder',
      'use a plain relative path',
    );
  }
  return { root: resolve(stageRoot), file };
}

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function symlinkRefused(path: string): CliError {
  return usageError(
    `refusing to write through a symlink at ${path}`,
    'remove the symlink (staged files are never written through links), then retry',
  );
}

/** The target folder as prepared: its path and the identity of the folder there. */
export interface PreparedFolder {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
}

/**
 * Creates the folders from the root down to the target's folder, one at a time,
 * refusing any symlink or non-folder on the way. Returns the target folder.
 */
export async function prepareFolders(plan: LocalPlan): Promise<PreparedFolder> {
  await fs.mkdir(plan.root, { recursive: true, mode: 0o700 });
  const rootStat = await fs.stat(plan.root);
  if (!rootStat.isDirectory())
    throw usageError(`${plan.root} is not a folder`, 'choose another destination');
  const parts = relative(plan.root, dirname(plan.file))
    .split(sep)
    .filter((p) => p !== '');
  let current = plan.root;
  for (const part of parts) {
    current = join(current, part);
    let st = await lstatOrUndefined(current);
    if (st === undefined) {
      await fs.mkdir(current, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      st = await fs.lstat(current);
    }
    // Security: a symlink planted in a parent would redirect the write outside the root.
    if (st.isSymbolicLink()) throw symlinkRefused(current);
    if (!st.isDirectory())
      throw usageError(`${current} is not a folder`, 'move it away, then retry');
  }
  await checkTarget(plan.file);
  const st = await fs.lstat(current);
  return { path: current, dev: st.dev, ino: st.ino };
}

/**
 * Re-walks the folders from the root to the prepared folder just before a rename.
 * Security: a folder on the way swapped for a symlink (or another folder) while the
 * bytes streamed would carry the rename outside the root; refuse instead. What is left
 * is the instant between this check and the rename, which Node cannot close (no
 * renameat); the check after the rename reports that case.
 */
export async function recheckFolders(plan: LocalPlan, prepared: PreparedFolder): Promise<void> {
  const parts = relative(plan.root, prepared.path)
    .split(sep)
    .filter((p) => p !== '');
  let current = plan.root;
  for (const part of parts) {
    current = join(current, part);
    const st = await lstatOrUndefined(current);
    if (st === undefined || st.isSymbolicLink() || !st.isDirectory()) throw folderChanged(current);
  }
  const st = await fs.lstat(prepared.path);
  if (st.dev !== prepared.dev || st.ino !== prepared.ino) throw folderChanged(prepared.path);
}

function folderChanged(path: string): CliError {
  return usageError(
    `the staging folder changed while the file was transferred (${path} was moved or replaced)`,
    'find out what else writes to the staging folder, then fetch again; nothing was staged',
  );
}

/** The target may be absent or a regular file; never a symlink or anything else. */
export async function checkTarget(file: string): Promise<Stats | undefined> {
  const st = await lstatOrUndefined(file);
  // Security: a symlink at the target could point anywhere the user can write.
  if (st?.isSymbolicLink() ?? false) throw symlinkRefused(file);
  if (st !== undefined && !st.isFile()) {
    throw usageError(`${file} exists and is not a regular file`, 'move it away, then retry');
  }
  return st;
}

export interface Digest {
  readonly sha256: string;
  readonly size: number;
}

/** A writable that hashes and counts what passes to `sink` (or only hashes). */
export function hashingSink(
  sink?: (chunks: Buffer[]) => Promise<void>,
  onBytes?: (n: number) => void,
) {
  const hash = createHash('sha256');
  let size = 0;
  const take = (chunks: Buffer[], done: (error?: Error | null) => void): void => {
    for (const chunk of chunks) {
      hash.update(chunk);
      size += chunk.length;
      onBytes?.(chunk.length);
    }
    if (sink === undefined) done();
    else sink(chunks).then(() => done(), done);
  };
  const stream = new Writable({
    // Chunks that arrive while a write is pending are handed over together (one writev
    // system call instead of one awaited write per 64 KiB).
    highWaterMark: 1024 * 1024,
    write: (chunk: Buffer, _enc, done) => take([chunk], done),
    writev: (entries, done) =>
      take(
        entries.map((e) => e.chunk as Buffer),
        done,
      ),
  });
  return { stream, digest: (): Digest => ({ sha256: hash.digest('hex'), size }) };
}

/** sha256 and size of a local regular file, streaming. */
export async function digestFile(file: string): Promise<Digest> {
  const sink = hashingSink();
  await pipeline(createReadStream(file), sink.stream);
  return sink.digest();
}

/**
 * Lets `fill` stream into an exclusively created temp file beside `file`, hashing as
 * it goes; `verify` sees the digest and `fill`'s result and throws to reject. Only
 * then is the temp file renamed over the target. On any failure the temp file is
 * removed, so a failed or corrupt transfer leaves nothing behind.
 */
export async function stageFile<T>(
  file: string,
  fill: (sink: Writable) => Promise<T>,
  verify: (digest: Digest, result: T) => void,
  onBytes?: (n: number) => void,
  beforeRename?: () => Promise<void>,
): Promise<{ digest: Digest; result: T }> {
  const temp = join(
    dirname(file),
    `.${basename(file).slice(0, 64)}.${randomBytes(6).toString('hex')}.broker-tmp`,
  );
  // Security: O_EXCL + O_NOFOLLOW: never open an existing file or follow a planted link.
  const handle = await fs.open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  let renamed = false;
  try {
    const sink = hashingSink((chunks) => writeAll(handle, chunks), onBytes);
    const result = await fill(sink.stream);
    await handle.sync();
    const digest = sink.digest();
    verify(digest, result);
    await handle.close();
    await beforeRename?.();
    await checkTarget(file);
    await fs.rename(temp, file);
    renamed = true;
    return { digest, result };
  } finally {
    if (!renamed) {
      await handle.close().catch(() => undefined);
      await fs.rm(temp, { force: true });
    }
  }
}

/** Writes every byte of `chunks`, finishing any partial writev with plain writes. */
async function writeAll(handle: FileHandle, chunks: Buffer[]): Promise<void> {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  let { bytesWritten } = await handle.writev(chunks);
  if (bytesWritten === total) return;
  const rest = Buffer.concat(chunks).subarray(bytesWritten);
  for (let offset = 0; offset < rest.length; offset += bytesWritten) {
    ({ bytesWritten } = await handle.write(rest, offset));
  }
}

/** Opens a local regular file for reading without following a symlink. */
export async function openLocalFile(file: string): Promise<Readable> {
  // Security: O_NOFOLLOW so a link swapped in after the checks is not followed.
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  return handle.createReadStream();
}
