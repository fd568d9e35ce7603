/**
 * One demo per folder. A second `npm start` beside a running demo used to rewrite the
 * running demo's config.yaml (to its own, dead port) before the audit lock stopped it.
 * Now a start first asks, reading only, whether a live process holds the demo's lock or
 * its audit lock, and refuses naming the running demo (its process and URL); only then
 * does it take `demo.lock` (atomically, like audit.lock), which it holds until it stops.
 * Two starts racing past the check are still one demo: only one takes the lock.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  acquireLock,
  AuditError,
  LOCK_FILE,
  lockHolder,
  nodeAuditFs,
  processIsAlive,
  type HeldLock,
} from '../audit/index.js';
import { CodedError } from '../base/coded-error.js';

export const DEMO_LOCK_FILE = 'demo.lock';

/** Another demo (or a broker) uses this folder; nothing was changed. */
export class DemoRunningError extends CodedError<'demo_running'> {
  override readonly name = 'DemoRunningError';
  constructor(message: string) {
    super('demo_running', message);
  }
}

const lockDeps = { fs: nodeAuditFs, pid: process.pid, isAlive: processIsAlive };

/** The running demo's URL, from the tokens.env it wrote, if it is there. */
async function runningUrl(dataDir: string): Promise<string | undefined> {
  const text = await readFile(join(dataDir, 'tokens.env'), 'utf8').catch(() => '');
  return /^export BROKER_URL=(\S+)$/m.exec(text)?.[1];
}

async function holder(dataDir: string): Promise<number | undefined> {
  return (
    (await lockHolder(dataDir, lockDeps, DEMO_LOCK_FILE)) ??
    (await lockHolder(dataDir, lockDeps, LOCK_FILE))
  );
}

async function refusal(dataDir: string, shown: string, pid: number): Promise<DemoRunningError> {
  const url = await runningUrl(dataDir);
  const where = url === undefined ? '' : `, ${url}; its CLI settings are in ${shown}/tokens.env`;
  return new DemoRunningError(
    `a demo is already running on ${shown} (process ${pid}${where}): use that one, or stop it (Ctrl-C in its terminal) before starting another; nothing was changed`,
  );
}

/**
 * Takes the demo's lock on `dataDir`, or throws DemoRunningError without having
 * changed any file when a live process holds it (or the audit lock). `shown`: the
 * folder as the owner should read it in the message.
 */
export async function holdDemoLock(dataDir: string, shown: string): Promise<HeldLock> {
  const running = await holder(dataDir);
  if (running !== undefined) throw await refusal(dataDir, shown, running);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    return await acquireLock(dataDir, lockDeps, DEMO_LOCK_FILE);
  } catch (error) {
    const raced = error instanceof AuditError ? await holder(dataDir) : undefined;
    if (raced !== undefined) throw await refusal(dataDir, shown, raced);
    throw error;
  }
}
