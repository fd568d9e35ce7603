/**
 * `data_dir/audit.lock`: one writer per data directory. The file holds the owner's pid.
 * It is created atomically complete: the pid goes into a private temp file (O_EXCL), which
 * is then hard-linked to `audit.lock`; link(2) fails with EEXIST when a lock exists, so a
 * reader never sees a half-written lock.
 */
import { join } from 'node:path';
import { AuditError } from './errors.js';
import { type AuditFs, errnoCode, syncDir, writeAll } from './fs.js';

export const LOCK_FILE = 'audit.lock';

export interface LockDeps {
  fs: AuditFs;
  pid: number;
  /** Whether a process with this pid is running. */
  isAlive: (pid: number) => boolean;
}

export interface HeldLock {
  readonly file: string;
  /** Set when a stale lock of a dead process was taken over. */
  readonly warning: string | undefined;
  release(): Promise<void>;
}

export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else; only ESRCH means gone.
    return errnoCode(err) !== 'ESRCH';
  }
}

export async function acquireLock(dir: string, deps: LockDeps): Promise<HeldLock> {
  const file = join(dir, LOCK_FILE);
  const tmp = `${file}.${deps.pid}.${process.hrtime.bigint()}.tmp`;
  const handle = await deps.fs.open(tmp, 'wx', 0o600);
  try {
    await writeAll(handle, Buffer.from(`${deps.pid}\n`, 'utf8'));
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    let warning: string | undefined;
    if (!(await tryLink(deps.fs, tmp, file))) {
      const owner = await readOwner(deps.fs, file);
      // Security: a live owner (including this very process) keeps the lock; two writers
      // would interleave seqs and fork the chain.
      if (owner === undefined || deps.isAlive(owner)) {
        throw new AuditError(
          'locked',
          owner === undefined
            ? `${file} exists but does not hold a pid; if no broker uses this data directory, remove it`
            : `${file} is held by running process ${owner}; stop that broker first (one broker per data directory)`,
        );
      }
      await deps.fs.unlink(file).catch((err: unknown) => {
        if (errnoCode(err) !== 'ENOENT') throw err;
      });
      if (!(await tryLink(deps.fs, tmp, file))) {
        throw new AuditError(
          'locked',
          `${file} was taken by another process while replacing a stale lock`,
        );
      }
      warning = `took over the stale lock ${file} left by process ${owner}, which is no longer running`;
    }
    await syncDir(deps.fs, dir);
    return {
      file,
      warning,
      release: async () => {
        // Only remove the lock if it is still ours.
        if ((await readOwner(deps.fs, file)) === deps.pid) await deps.fs.unlink(file);
      },
    };
  } finally {
    await deps.fs.unlink(tmp).catch(() => undefined);
  }
}

async function tryLink(fs: AuditFs, from: string, to: string): Promise<boolean> {
  try {
    await fs.link(from, to);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'EEXIST') return false;
    throw err;
  }
}

async function readOwner(fs: AuditFs, file: string): Promise<number | undefined> {
  let text: string;
  try {
    text = (await fs.readFile(file)).toString('utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  const m = /^(\d{1,10})\n?$/.exec(text);
  if (m === null) return undefined;
  const pid = Number(m[1]);
  return pid > 0 ? pid : undefined;
}
