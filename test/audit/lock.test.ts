/**
 * One writer per data directory: two writers would interleave seqs and fork the chain.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit } from '../../broker/audit/index.js';
import { tempDir, tickingClock } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';

const CHILD = join(import.meta.dirname, 'fixtures', 'audit-child.ts');
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0))
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function startChild(
  mode: 'hold' | 'try',
  dir: string,
): { child: ChildProcess; line: Promise<Record<string, unknown>> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, mode, dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const line = new Promise<Record<string, unknown>>((resolve, reject) => {
    rl.once('line', (l) => resolve(JSON.parse(l) as Record<string, unknown>));
    child.once('exit', (code) => reject(new Error(`child exited ${code} before reporting`)));
  });
  return { child, line };
}

const exited = (c: ChildProcess): Promise<void> =>
  new Promise((r) =>
    c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r()),
  );

describe('attack: a second writer on the same data directory', () => {
  it('a second open in the same process is refused, naming the pid and the lock file', async () => {
    const dir = tempDir();
    const first = await AuditLog.open(dir, { now: tickingClock() });
    const err = await AuditLog.open(dir, { now: tickingClock() }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'locked' });
    expect((err as Error).message).toContain(`process ${process.pid}`);
    expect((err as Error).message).toContain(join(dir, 'audit.lock'));
    // The refused open left the holder's lock alone.
    expect(readFileSync(join(dir, 'audit.lock'), 'utf8')).toBe(`${process.pid}\n`);
    await appendLine(first, 'intent', {});
    await first.close();
    expect(existsSync(join(dir, 'audit.lock'))).toBe(false);
    const again = await AuditLog.open(dir, { now: tickingClock() });
    await again.close();
  });

  it('a child process cannot open a log this process holds', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    const { line } = startChild('try', dir);
    const report = await line;
    expect(report).toMatchObject({ status: 'refused', code: 'locked' });
    expect(report.message).toContain(`process ${process.pid}`);
    await log.close();
  });

  it('this process cannot open a log a live child holds', async () => {
    const dir = tempDir();
    const { child, line } = startChild('hold', dir);
    expect(await line).toMatchObject({ status: 'opened' });
    const err = await AuditLog.open(dir, { now: tickingClock() }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'locked' });
    expect((err as Error).message).toContain(`process ${child.pid}`);
    child.stdin?.end();
    await exited(child);
    const log = await AuditLog.open(dir, { now: tickingClock() });
    expect(log.warnings).toEqual([]);
    await log.close();
  });

  it('a stale lock of a killed process is taken over, with a warning', async () => {
    const dir = tempDir();
    const { child, line } = startChild('hold', dir);
    expect(await line).toMatchObject({ status: 'opened' });
    child.kill('SIGKILL');
    await exited(child);
    expect(readFileSync(join(dir, 'audit.lock'), 'utf8')).toBe(`${child.pid}\n`);
    const log = await AuditLog.open(dir, { now: tickingClock() });
    expect(log.warnings.join('\n')).toMatch(
      new RegExp(`took over the stale lock .*audit\\.lock left by process ${child.pid}`),
    );
    expect(readFileSync(join(dir, 'audit.lock'), 'utf8')).toBe(`${process.pid}\n`);
    await appendLine(log, 'start', {});
    await log.close();
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 2 });
  });

  it('a lock file without a pid is refused rather than guessed stale', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'audit.lock'), 'garbage');
    await expect(AuditLog.open(dir, { now: tickingClock() })).rejects.toMatchObject({
      code: 'locked',
    });
  });

  it('a refused open (corrupt log) releases the lock it took', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'audit.log'), 'not a record\n');
    await expect(AuditLog.open(dir, { now: tickingClock() })).rejects.toMatchObject({
      code: 'corrupt',
    });
    expect(existsSync(join(dir, 'audit.lock'))).toBe(false);
  });

  it('two opens racing in one process: exactly one wins', async () => {
    const dir = tempDir();
    const results = await Promise.allSettled([
      AuditLog.open(dir, { now: tickingClock() }),
      AuditLog.open(dir, { now: tickingClock() }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { code: 'locked' },
    });
    await (won[0] as PromiseFulfilledResult<AuditLog>).value.close();
  });

  it('a pid that exists but is not ours to signal (EPERM) counts as alive', async () => {
    const dir = tempDir();
    // pid 1 runs as root; for a non-root test run kill(1, 0) is EPERM, for root it succeeds.
    writeFileSync(join(dir, 'audit.lock'), '1\n');
    await expect(AuditLog.open(dir, { now: tickingClock() })).rejects.toMatchObject({
      code: 'locked',
    });
  });

  it('a stale lock (injected liveness) is replaced and the new lock holds our pid', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'audit.lock'), '4242\n');
    const seen: number[] = [];
    const log = await AuditLog.open(dir, {
      now: tickingClock(),
      pid: 777,
      isAlive: (pid) => {
        seen.push(pid);
        return false;
      },
    });
    expect(seen).toEqual([4242]);
    expect(readFileSync(join(dir, 'audit.lock'), 'utf8')).toBe('777\n');
    expect(log.warnings[0]).toMatch(/left by process 4242/);
    await log.close();
    expect(existsSync(join(dir, 'audit.lock'))).toBe(false);
  });

  it('close does not remove a lock that is no longer ours', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    writeFileSync(join(dir, 'audit.lock'), '999999\n');
    await log.close();
    expect(readFileSync(join(dir, 'audit.lock'), 'utf8')).toBe('999999\n');
  });
});
