/**
 * How staged files get to their place on the agent's host (where that is: local-path.ts).
 *
 * Security: a staged file is written only inside its staging root. The root is the
 * owner's choice; below it no component may be a symlink or a non-directory, the target
 * may not be a symlink, and bytes go to a temp file created exclusively (O_EXCL,
 * O_NOFOLLOW, 0600) in the target folder, renamed into place only after verification.
 * Nothing is created before the broker has said yes, and a failure removes what this
 * command created.
 */
import { constants, promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, sep } from 'node:path';
import { Writable } from 'node:stream';
import { type CliError, usageError } from './errors.js';
import { isWithin } from './env.js';
import type { Digest } from './file-bytes.js';
import type { LocalPlan } from './local-path.js';
import { relayed } from '../../../broker/base/relayed-memory.js';

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The folder names from `root` (excluded) down to `dir`. */
const foldersBetween = (root: string, dir: string): string[] =>
  relative(root, dir)
    .split(sep)
    .filter((p) => p !== '');

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

/** Folders that `mkdir(root, { recursive })` created: from the first one down to root. */
function chainFrom(first: string | undefined, root: string): string[] {
  if (first === undefined) return [];
  const chain = [root];
  for (let dir = dirname(root); isWithin(dir, first); dir = dirname(dir)) chain.unshift(dir);
  return chain;
}

/**
 * Walks the folders from the root to the target's folder, refusing any symlink or
 * non-folder on the way, and the target if it is not a regular file. With `create`
 * it creates what is missing (0700) and returns the target folder and every folder it
 * created; without, it creates nothing and stops at the first missing folder.
 */
async function walkFolders(
  plan: LocalPlan,
  create: boolean,
): Promise<{ folder: PreparedFolder | undefined; created: string[] }> {
  const created: string[] = [];
  try {
    if (create) {
      created.push(
        ...chainFrom(await fs.mkdir(plan.root, { recursive: true, mode: 0o700 }), plan.root),
      );
    }
    const rootStat = await fs.stat(plan.root).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' && !create) return undefined;
      throw err;
    });
    if (rootStat === undefined) return { folder: undefined, created };
    if (!rootStat.isDirectory())
      throw usageError(`${plan.root} is not a folder`, 'choose another destination');
    const parts = foldersBetween(plan.root, dirname(plan.file));
    let current = plan.root;
    for (const part of parts) {
      current = join(current, part);
      let st = await lstatOrUndefined(current);
      if (st === undefined) {
        if (!create) return { folder: undefined, created };
        // Another process may create it meanwhile: then it is not ours to remove.
        const made = await fs.mkdir(current, { mode: 0o700 }).then(
          () => true,
          (err: NodeJS.ErrnoException) => {
            if (err.code === 'EEXIST') return false;
            throw err;
          },
        );
        if (made) created.push(current);
        st = await fs.lstat(current);
      }
      // Security: a symlink planted in a parent would redirect the write outside the root.
      if (st.isSymbolicLink()) throw symlinkRefused(current);
      if (!st.isDirectory())
        throw usageError(`${current} is not a folder`, 'move it away, then retry');
    }
    await checkTarget(plan.file);
    const st = await fs.lstat(current);
    return { folder: { path: current, dev: st.dev, ino: st.ino }, created };
  } catch (error) {
    await removeFolders(created);
    throw error;
  }
}

/** The read-only half of `prepareFolders`: refuses what it would refuse, creates nothing. */
export async function inspectFolders(plan: LocalPlan): Promise<void> {
  await walkFolders(plan, false);
}

/**
 * Creates the folders from the root down to the target's folder, one at a time,
 * refusing any symlink or non-folder on the way. Returns the target folder and the
 * folders it created (for `removeFolders` should the command fail).
 */
export async function prepareFolders(
  plan: LocalPlan,
): Promise<{ folder: PreparedFolder; created: string[] }> {
  const { folder, created } = await walkFolders(plan, true);
  if (folder === undefined) throw new Error('prepareFolders: the folders were not created');
  return { folder, created };
}

/** Removes folders this command created, deepest first, each only if it is still empty. */
export async function removeFolders(created: readonly string[]): Promise<void> {
  for (const dir of [...created].reverse()) await fs.rmdir(dir).catch(() => undefined);
}

/**
 * Re-walks the folders from the root to the prepared folder just before a rename.
 * Security: a folder on the way swapped for a symlink (or another folder) while the
 * bytes streamed would carry the rename outside the root; refuse instead. What is left
 * is the instant between this check and the rename, which Node cannot close (no
 * renameat); the check after the rename reports that case.
 */
export async function recheckFolders(plan: LocalPlan, prepared: PreparedFolder): Promise<void> {
  const parts = foldersBetween(plan.root, prepared.path);
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
      relayed(chunk.length);
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

/** A file staged by `stageFile`, and how to take it back should recording it fail. */
export interface Staged<T> {
  readonly digest: Digest;
  readonly result: T;
  /** Removes what staging created: the file if it is new, and the folders made for it. */
  undo(): Promise<void>;
}

/**
 * Lets `fill` stream into an exclusively created temp file beside `plan.file`, hashing
 * as it goes; `verify` sees the digest and `fill`'s result and throws to reject. Only
 * then is the temp file renamed over the target. `fill` calls `open` once the broker
 * has said yes and the first byte is due: only then are folders and the temp file
 * created. On any failure the temp file and the folders this call created are removed,
 * so a refused, failed or corrupt transfer leaves nothing behind.
 */
export async function stageFile<T>(
  plan: LocalPlan,
  fill: (open: () => Promise<Writable>) => Promise<T>,
  verify: (digest: Digest, result: T) => void,
  onBytes?: (n: number) => void,
): Promise<Staged<T>> {
  const replacing = (await checkTarget(plan.file)) !== undefined;
  const opened: {
    folder?: PreparedFolder;
    created?: string[];
    temp?: string;
    handle?: FileHandle;
    digest?: () => Digest;
  } = {};
  const open = async (): Promise<Writable> => {
    if (opened.created !== undefined) throw new Error('stageFile: opened twice');
    const { folder, created } = await prepareFolders(plan);
    Object.assign(opened, { folder, created });
    opened.temp = join(
      folder.path,
      `.${basename(plan.file).slice(0, 64)}.${randomBytes(6).toString('hex')}.broker-tmp`,
    );
    // Security: O_EXCL + O_NOFOLLOW: never open an existing file or follow a planted link.
    const handle = await fs.open(
      opened.temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    opened.handle = handle;
    const sink = hashingSink((chunks) => writeAll(handle, chunks), onBytes);
    opened.digest = sink.digest;
    return sink.stream;
  };
  let renamed = false;
  try {
    const result = await fill(open);
    const { folder, handle, temp, digest: digestOf } = opened;
    if (folder === undefined || handle === undefined || temp === undefined || !digestOf) {
      throw new Error('stageFile: the transfer ended without opening the file');
    }
    await handle.sync();
    const digest = digestOf();
    verify(digest, result);
    await handle.close();
    await recheckFolders(plan, folder);
    await checkTarget(plan.file);
    await fs.rename(temp, plan.file);
    renamed = true;
    const created = opened.created ?? [];
    return {
      digest,
      result,
      undo: async () => {
        if (!replacing) await fs.rm(plan.file, { force: true });
        await removeFolders(created);
      },
    };
  } finally {
    if (!renamed) {
      await opened.handle?.close().catch(() => undefined);
      if (opened.temp !== undefined) await fs.rm(opened.temp, { force: true });
      await removeFolders(opened.created ?? []);
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
