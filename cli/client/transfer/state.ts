/**
 * The CLI's own records of what it staged (the manifest): per remote file, the local
 * path, size, sha256, etag, when, and a checkout's lock token. They are how `push` knows
 * which version it may replace, how `fetch` notices a local edit, and where `checkin`
 * finds the lock token.
 *
 * Security: the records live in the state folder, which no fetched file can reach: it is
 * not inside the staging folder (checked in env.ts), an explicit LOCAL inside it is
 * refused (staging.ts), and each record's name is `%` followed by hex digits, a
 * percent-escape, which the wall refuses in every remote path. The folder is created
 * 0700 and must stay private to this user; records are 0600 and are never read or
 * written through a symlink. A manifest inside the staging tree (what older versions
 * kept there, as `.broker-manifest.json`) is never read: a fetched file could pose as one.
 */
import { constants, promises as fs } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SHA256_HEX } from '../../../broker/base/protocol.js';
import { usageError } from './errors.js';
import { asStamp, type FileStamp } from './file-stamp.js';
import { isObject, optionalString, parseJson } from './json.js';

/** What older versions kept inside the staging folder; now only ever reported, never read. */
export const LEGACY_MANIFEST_NAME = '.broker-manifest.json';

/** A record is one short JSON object; anything bigger is not one of ours. */
const MAX_RECORD_BYTES = 64 * 1024;

/** One staged remote file, as the CLI recorded it. */
export interface StagedRecord {
  readonly instance: string;
  readonly path: string;
  readonly local_path: string;
  readonly size: number;
  readonly sha256: string;
  readonly etag: string | null;
  readonly fetched_at: string;
  readonly lock_token?: string;
  /** What the local file looked like once fetched or pushed (file-stamp.ts); absent in older records. */
  readonly stamp?: FileStamp;
}

/** The fields a record file holds (`version` and StagedRecord's), and nothing else. */
const RECORD_FIELDS: ReadonlySet<string> = new Set([
  'version',
  'instance',
  'path',
  'local_path',
  'size',
  'sha256',
  'etag',
  'fetched_at',
  'lock_token',
  'stamp',
]);

/**
 * `value` as a record of version 1, or undefined: every field of its type, and no field
 * the CLI does not know (a record is only ever what this code wrote).
 */
function asRecord(value: unknown): StagedRecord | undefined {
  if (!isObject(value) || value.version !== 1) return undefined;
  if (Object.keys(value).some((k) => !RECORD_FIELDS.has(k))) return undefined;
  const { instance, path, local_path, size, sha256, etag, fetched_at, lock_token } = value;
  const stamp = value.stamp === undefined ? undefined : asStamp(value.stamp);
  if (
    typeof instance !== 'string' ||
    typeof path !== 'string' ||
    typeof local_path !== 'string' ||
    typeof fetched_at !== 'string' ||
    !(typeof size === 'number' && Number.isSafeInteger(size) && size >= 0) ||
    !(typeof sha256 === 'string' && SHA256_HEX.test(sha256)) ||
    !(etag === null || typeof etag === 'string') ||
    !optionalString(lock_token) ||
    (value.stamp !== undefined && stamp === undefined)
  ) {
    return undefined;
  }
  return {
    instance,
    path,
    local_path,
    size,
    sha256,
    etag,
    fetched_at,
    ...(lock_token === undefined ? {} : { lock_token }),
    ...(stamp === undefined ? {} : { stamp }),
  };
}

/** The record's file name: `%` and the sha256 of `instance:path` (see the module comment). */
export function recordName(instance: string, path: string): string {
  return `%${createHash('sha256').update(`${instance}:${path}`).digest('hex')}.json`;
}

const errnoOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

export class StateStore {
  constructor(readonly dir: string) {}

  /**
   * The folder, if it exists, is a real folder of this user that nobody else can
   * read or write. Called before anything is transferred, so a bad state folder stops
   * a command before the broker is asked.
   */
  async check(): Promise<void> {
    let st: Awaited<ReturnType<typeof fs.lstat>>;
    try {
      st = await fs.lstat(this.dir);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return;
      throw err;
    }
    // Security: a link or a shared folder would let someone else write the records that
    // decide what the CLI may overwrite.
    if (st.isSymbolicLink() || !st.isDirectory()) {
      throw usageError(
        `the CLI state folder ${this.dir} is not a folder (a symlink or a file is never used)`,
        'remove it, or set BROKER_STATE_DIR to a private folder',
      );
    }
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
      throw usageError(
        `the CLI state folder ${this.dir} belongs to another user`,
        'set BROKER_STATE_DIR to a folder of your own',
      );
    }
    if ((st.mode & 0o077) !== 0) {
      throw usageError(
        `the CLI state folder ${this.dir} is open to other users (mode ${(st.mode & 0o777).toString(8)})`,
        `make it private: chmod 700 ${this.dir}`,
      );
    }
  }

  /** The record of `instance:path`, or undefined when the CLI never staged it. */
  async get(instance: string, path: string): Promise<StagedRecord | undefined> {
    const file = join(this.dir, recordName(instance, path));
    let text: string;
    try {
      // Security: O_NOFOLLOW: a record planted as a link is refused, not followed.
      const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const st = await handle.stat();
        if (!st.isFile() || st.size > MAX_RECORD_BYTES) throw damaged(file);
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return undefined;
      if (errnoOf(err) === 'ELOOP') throw damaged(file);
      throw err;
    }
    const record = asRecord(parseJson(text));
    // A record under another file's name is not this file's record.
    if (record === undefined || record.instance !== instance || record.path !== path) {
      throw damaged(file);
    }
    return record;
  }

  /** Writes the record atomically: a private temp file, fsync, then rename over the old one. */
  async put(record: StagedRecord): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.check();
    const name = recordName(record.instance, record.path);
    const temp = join(this.dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
    const handle = await fs.open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    let renamed = false;
    try {
      await handle.writeFile(`${JSON.stringify({ version: 1, ...record }, null, 2)}\n`);
      await handle.sync();
      await handle.close();
      await fs.rename(temp, join(this.dir, name));
      renamed = true;
    } finally {
      if (!renamed) {
        await handle.close().catch(() => undefined);
        await fs.rm(temp, { force: true });
      }
    }
  }
}

function damaged(file: string) {
  return usageError(
    `the CLI's record ${file} is damaged or not a plain file`,
    'move it aside; the staged file then counts as one the CLI did not stage (use --force to replace it)',
  );
}

/** What a successful transfer leaves behind: the record, and the command's result. */
export async function recordStaged(
  state: StateStore,
  staged: Omit<StagedRecord, 'fetched_at'>,
  status: string,
): Promise<{
  status: string;
  local_path: string;
  sha256: string;
  size: number;
  etag: string | null;
}> {
  await state.put({ ...staged, fetched_at: new Date().toISOString() });
  return {
    status,
    local_path: staged.local_path,
    sha256: staged.sha256,
    size: staged.size,
    etag: staged.etag,
  };
}
