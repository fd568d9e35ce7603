/**
 * A failed or timed-out write fails the whole log: the batch and every later append
 * reject, because we cannot know what reached the disk (docs/contracts.md §4: audit failure ⇒ the
 * operation is refused). A restart re-verifies; after a full disk the log also resumes
 * by itself once a write succeeds again (resume.test.ts), never before its next try.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { AuditError, AuditLog, verifyAudit } from '../../broker/audit/index.js';
import { until } from '../../support/until.js';
import { memoryLogger } from '../../broker/base/log.js';
import { errnoError, InstrumentedFs, logLines, tempDir, tickingClock } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';

async function settle<T>(p: Promise<T>): Promise<T | AuditError> {
  return p.catch((e: unknown) => {
    expect(e).toBeInstanceOf(AuditError);
    return e as AuditError;
  });
}

describe('attack: the disk fills up (ENOSPC)', () => {
  it('the failing batch rejects and every later append rejects too', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const logger = memoryLogger();
    const log = await AuditLog.open(dir, { now: tickingClock(), fs, logger });
    const ok = await appendLine(log, 'intent', { n: 0 });
    fs.faults.writeError = () => errnoError('ENOSPC', 'no space left on device, write');
    const batch = await Promise.all([1, 2, 3].map((n) => settle(appendLine(log, 'intent', { n }))));
    for (const r of batch) expect(r).toMatchObject({ code: 'write_failed' });
    expect((batch[0] as AuditError).message).toMatch(/ENOSPC.*restart the broker/);

    // The disk has space again, but the log stays failed until its next try is due
    // (resume.test.ts): nothing is written before then.
    fs.faults.writeError = undefined;
    const writesBefore = fs.logWrites;
    await expect(appendLine(log, 'intent', { n: 4 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    expect(fs.logWrites).toBe(writesBefore);
    expect(logger.lines.join('')).toMatch(/audit log failed/);
    await log.close();

    expect(ok.seq).toBe(1);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 1 });
  });

  it('an fsync error (EIO) fails the log the same way', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    fs.faults.syncError = () => errnoError('EIO', 'i/o error, fsync');
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    fs.faults.syncError = undefined;
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    await log.close();
  });

  it('appends queued behind a failing batch are rejected, none resolves', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    fs.faults.syncDelayMs = 5;
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    let calls = 0;
    fs.faults.syncError = () => (++calls === 1 ? errnoError('EIO', 'fsync') : undefined);
    const first = settle(appendLine(log, 'intent', { n: 1 }));
    await new Promise((r) => setImmediate(r));
    const queued = Array.from({ length: 10 }, (_, n) => settle(appendLine(log, 'intent', { n })));
    const results = await Promise.all([first, ...queued]);
    for (const r of results) expect(r).toBeInstanceOf(AuditError);
    await log.close();
  });

  it('a checkpoint that cannot be written fails the log for later appends', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const logger = memoryLogger();
    const log = await AuditLog.open(dir, { now: tickingClock(), fs, logger });
    fs.faults.checkpointWriteError = () => {
      return errnoError('ENOSPC', 'no space left on device');
    };
    // The line itself is durable, so this append resolves …
    const rec = await appendLine(log, 'intent', {});
    expect(rec.seq).toBe(1);
    // … but the checkpoint update (once the log is quiet) fails, and from then on
    // nothing is appended.
    // The failure is the log's once it is said (its write is tried a few awaits earlier).
    await until('the quiet checkpoint write to fail the log', () =>
      logger.lines.some((l) => l.includes('audit log failed')),
    );
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    await log.close();
    // The log is ahead of its (seq 0) checkpoint: the crash shape, which verifies.
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 1, checkpoint: { seq: 0 } });
  });
});

describe('attack: the log is a full device (/dev/full)', () => {
  it('append rejects with ENOSPC and the log stays failed', async () => {
    const dir = tempDir();
    // The real kernel's ENOSPC where /dev/full exists (Linux); an injected one elsewhere.
    const devFull = existsSync('/dev/full');
    const fs = new InstrumentedFs();
    if (devFull) fs.logTarget = '/dev/full';
    else fs.faults.writeError = () => errnoError('ENOSPC', 'no space left on device, write');
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    const err = await settle(appendLine(log, 'intent', { path: 'a' }));
    expect(err).toMatchObject({ code: 'write_failed' });
    expect((err as AuditError).message).toMatch(/ENOSPC/);
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    await log.close();
  });
});

describe('attack: the disk hangs', () => {
  it('a hanging fsync times out after writeTimeoutMs and fails the log', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    // Long enough for open's own checkpoint write on a loaded machine.
    const log = await AuditLog.open(dir, { now: tickingClock(), fs, writeTimeoutMs: 500 });
    fs.faults.syncHangs = true;
    const started = Date.now();
    const results = await Promise.all([1, 2].map((n) => settle(appendLine(log, 'intent', { n }))));
    expect(Date.now() - started).toBeLessThan(2000);
    for (const r of results) expect(r).toMatchObject({ code: 'timeout' });
    expect((results[0] as AuditError).message).toMatch(/did not finish within 500 ms/);
    fs.faults.syncHangs = false;
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'timeout' });
    await log.close();
  });

  it('the default timeout is 5000 ms (a hang is not waited for forever)', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    fs.faults.syncHangs = true;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let outcome: unknown;
      void appendLine(log, 'intent', {}).then(
        () => (outcome = 'resolved'),
        (e: unknown) => (outcome = e),
      );
      // Wait (on real I/O) until the write reached the hanging fsync and armed its timer.
      while (vi.getTimerCount() === 0) await new Promise((r) => setImmediate(r));
      await vi.advanceTimersByTimeAsync(4999);
      expect(outcome).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(outcome).toMatchObject({ code: 'timeout' });
    } finally {
      vi.useRealTimers();
    }
    await log.close();
  });

  it('after a failure the log file holds only whole durable records plus what reopening recovers', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    // Long enough for open's own checkpoint write on a loaded machine (30 ms was not).
    const log = await AuditLog.open(dir, { now: tickingClock(), fs, writeTimeoutMs: 500 });
    await appendLine(log, 'intent', { n: 1 });
    fs.faults.syncHangs = true;
    await expect(appendLine(log, 'intent', { n: 2 })).rejects.toMatchObject({ code: 'timeout' });
    await log.close();
    // The timed-out line did reach the file here; a restart accepts it (beyond the checkpoint).
    const reopened = await AuditLog.open(dir, { now: tickingClock() });
    const next = await appendLine(reopened, 'start', {});
    await reopened.close();
    expect(logLines(dir)).toHaveLength(3);
    expect(next.seq).toBe(3);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3 });
  });
});
