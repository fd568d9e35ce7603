/**
 * The file-system surface the audit log uses, injectable so tests can make writes fail
 * (ENOSPC, EIO), hang, or count fsyncs. The default is node:fs/promises file handles.
 */
import { constants, promises as fsp } from 'node:fs';

/** An open file. `node:fs/promises` FileHandle satisfies this. */
export interface AuditFileHandle {
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  /** Writes at the current position (the end, for a file opened with 'a+'). */
  write(data: Uint8Array): Promise<{ bytesWritten: number }>;
  /** fsync(2). */
  sync(): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

/**
 * Flags used: 'a+' (the log: read + append, never truncate), 'w' (a checkpoint temp file),
 * 'wx' (a lock temp file, O_EXCL), 'r' (a directory, to fsync it).
 */
export type AuditOpenFlags = 'a+' | 'w' | 'wx' | 'r';

export interface AuditFs {
  open(path: string, flags: AuditOpenFlags, mode?: number): Promise<AuditFileHandle>;
  /** Rejects with code ENOENT when the file does not exist. */
  readFile(path: string): Promise<Buffer>;
  rename(from: string, to: string): Promise<void>;
  /** Rejects with code EEXIST when `to` exists: the atomic create-if-absent. */
  link(existing: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, options: { recursive: true; mode: number }): Promise<unknown>;
}

/**
 * Security: every open refuses a symlink at the path itself (`O_NOFOLLOW`): the log, its
 * checkpoint and lock are never written through a link planted in the data folder.
 */
const OPEN_FLAGS: Record<AuditOpenFlags, number> = {
  'a+': constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
  w: constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
  wx: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
  r: constants.O_RDONLY | constants.O_NOFOLLOW,
};

export const nodeAuditFs: AuditFs = {
  open: (path, flags, mode) => fsp.open(path, OPEN_FLAGS[flags], mode),
  readFile: (path) => fsp.readFile(path),
  rename: (from, to) => fsp.rename(from, to),
  link: (existing, to) => fsp.link(existing, to),
  unlink: (path) => fsp.unlink(path),
  mkdir: (path, options) => fsp.mkdir(path, options),
};

/** The errno code of a Node error (`ENOENT`, …), if any. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Writes all of `data`, looping over short writes. */
export async function writeAll(handle: AuditFileHandle, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) {
    const { bytesWritten } = await handle.write(data.subarray(off));
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${off}`);
    off += bytesWritten;
  }
}

/** fsync a directory so a rename or link in it is durable. */
export async function syncDir(fs: AuditFs, dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
