/**
 * What a local file looked like when the CLI last fetched or pushed it, as git's index
 * records it: the nanoseconds of its last content change (mtime) and inode change
 * (ctime), and which inode on which device it is (its size is the record's own). A file
 * whose stamp differs has been written or replaced since: `push` then makes its call at
 * once, beside the hash, rather than after it. A matching stamp proves nothing (a write
 * within the clock's granularity keeps it, a clock set back can restore it), so such a
 * file is hashed first, as before. The stamp only ever saves a wait; what is sent, and
 * whether anything is, the hash decides.
 */
import { promises as fs } from 'node:fs';
import { isObject } from './json.js';

export interface FileStamp {
  readonly mtime_ns: string;
  readonly ctime_ns: string;
  readonly ino: string;
  readonly dev: string;
}

const DIGITS = /^[0-9]{1,30}$/;

/** The stamp and size of the file at `path` (not following a link), or undefined when absent. */
export async function stampOf(
  path: string,
): Promise<{ stamp: FileStamp; size: number } | undefined> {
  let st;
  try {
    st = await fs.lstat(path, { bigint: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return {
    stamp: {
      mtime_ns: String(st.mtimeNs),
      ctime_ns: String(st.ctimeNs),
      ino: String(st.ino),
      dev: String(st.dev),
    },
    size: Number(st.size),
  };
}

/** Both are stamps and every field is the same. */
export function sameStamp(a: FileStamp | undefined, b: FileStamp | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.mtime_ns === b.mtime_ns &&
    a.ctime_ns === b.ctime_ns &&
    a.ino === b.ino &&
    a.dev === b.dev
  );
}

/** `value` as a stamp the CLI wrote (exactly its four fields, each decimal digits), or undefined. */
export function asStamp(value: unknown): FileStamp | undefined {
  if (!isObject(value)) return undefined;
  const keys = Object.keys(value).sort();
  if (keys.join(',') !== 'ctime_ns,dev,ino,mtime_ns') return undefined;
  const { mtime_ns, ctime_ns, ino, dev } = value;
  for (const field of [mtime_ns, ctime_ns, ino, dev])
    if (typeof field !== 'string' || !DIGITS.test(field)) return undefined;
  return value as unknown as FileStamp;
}
