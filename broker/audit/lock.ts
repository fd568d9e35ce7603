/**
 * `data_dir/audit.lock`: one writer per data directory. The file holds the owner's pid.
 * It is created atomically complete: the pid goes into a private temp file (O_EXCL), which
 * is then hard-linked to `audit.lock`; link(2) fails with EEXIST when a lock exists, so a
 * reader never sees a half-written lock. The same mechanism takes other locks of one
 * folder (`name`: the demo's `demo.lock`), and `lockHolder` asks who holds one without
 * touching anything.
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

export async function acquireLock(
  dir: string,
  deps: LockDeps,
  name: string = LOCK_FILE,
): Promise<HeldLock> {
  const file = join(dir, name);
  const tmp = `${file}.${deps.pid}.${process.hrtime.bigint()}.tmp`;
  const handle = await deps.fs.open(tmp, 'wx', 0o600);
  try {
    await writeAll(handle, Buffer.from(`${deps.pid}\n`, 'utf8'));
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    const warning = await takeLock(dir, file, tmp, deps);
    await syncDir(deps.fs, dir);
    return {
      file,
      warning,
      release: async () => {
        // Only remove the lock if it is still ours.
        const owner = await readOwner(deps.fs, file);
        if (owner.kind === 'pid' && owner.pid === deps.pid) await deps.fs.unlink(file);
      },
    };
  } finally {
    // The temp file only carried the pid into the link; a leftover is harmless.
    await deps.fs.unlink(tmp).catch(() => undefined);
  }
}

/** Links `tmp` to `file`; returns a warning when a stale lock was replaced. */
async function takeLock(
  dir: string,
  file: string,
  tmp: string,
  deps: LockDeps,
): Promise<string | undefined> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (await tryLink(deps.fs, tmp, file)) return undefined;
    const owner = await readOwner(deps.fs, file);
    if (owner.kind === 'missing') continue; // released meanwhile: try again
    if (owner.kind === 'garbage') {
      throw new AuditError(
        'locked',
        `${file} exists but does not hold a pid; if no broker uses ${dir}, remove it`,
      );
    }
    // Security: a live owner (including this very process) keeps the lock; two writers
    // would interleave seqs and fork the chain.
    if (deps.isAlive(owner.pid)) {
      throw new AuditError(
        'locked',
        `${file} is held by running process ${owner.pid}; stop that broker first (one broker per data directory)`,
      );
    }
    await deps.fs.unlink(file).catch((err: unknown) => {
      if (errnoCode(err) !== 'ENOENT') throw err;
    });
    if (await tryLink(deps.fs, tmp, file)) {
      return `took over the stale lock ${file} left by process ${owner.pid}, which is no longer running`;
    }
  }
  throw new AuditError(
    'locked',
    `${file} keeps changing hands; another broker is starting on ${dir}`,
  );
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

/**
 * The pid of the running process that holds `dir/name`, or undefined when nobody does
 * (no lock, or a stale one of a process that is gone). Reads only: changes no file.
 */
export async function lockHolder(
  dir: string,
  deps: Pick<LockDeps, 'fs' | 'isAlive'>,
  name: string = LOCK_FILE,
): Promise<number | undefined> {
  const owner = await readOwner(deps.fs, join(dir, name));
  return owner.kind === 'pid' && deps.isAlive(owner.pid) ? owner.pid : undefined;
}

type Owner = { kind: 'missing' } | { kind: 'garbage' } | { kind: 'pid'; pid: number };

async function readOwner(fs: AuditFs, file: string): Promise<Owner> {
  let text: string;
  try {
    text = (await fs.readFile(file)).toString('utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  const m = /^(\d{1,10})\n$/.exec(text);
  const pid = m === null ? 0 : Number(m[1]);
  return pid > 0 ? { kind: 'pid', pid } : { kind: 'garbage' };
}
