/**
 * The audit log after a full disk (docs/contracts.md §4, durability): while it cannot be
 * written every append is refused (so every operation is); once a write succeeds again
 * it resumes without a restart, through one `recovery` record that accounts for the
 * outage and for whatever a failed write left in the file, and the chain verifies. Any
 * other failure (an I/O error) still holds until a restart.
 */
import { describe, expect, it } from 'vitest';
import {
  type AuditFileHandle,
  type AuditFs,
  AuditLog,
  nodeAuditFs,
  verifyAudit,
} from '../../broker/audit/index.js';
import { MAX_PROBE_DELAY_MS, PROBE_DELAY_MS } from '../../broker/audit/resume.js';
import { memoryLogger } from '../../broker/base/log.js';
import { errnoError, InstrumentedFs, logLines, T0, tempDir } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';
import { until } from '../../support/until.js';

/** A clock the test moves. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = T0;
  return { now: () => t, advance: (ms) => (t += ms) };
}

const enospc = (): Error => errnoError('ENOSPC', 'no space left on device, write');
const records = (dir: string): Record<string, unknown>[] =>
  logLines(dir).map((l) => JSON.parse(l) as Record<string, unknown>);

/**
 * node's fs whose audit.log writes can be cut: after `cutAfter` more bytes a write stops
 * short and the next one fails with ENOSPC (a disk that filled up mid-line).
 */
function cuttingFs(): { fs: AuditFs; cut(bytes: number | undefined): void } {
  let budget: number | undefined;
  const fs: AuditFs = {
    ...nodeAuditFs,
    async open(path, flags, mode) {
      const real = await nodeAuditFs.open(path, flags, mode);
      if (!path.endsWith('audit.log')) return real;
      const handle: AuditFileHandle = {
        read: (b, o, l, p) => real.read(b, o, l, p),
        stat: () => real.stat(),
        close: () => real.close(),
        sync: () => real.sync(),
        write: async (data) => {
          if (budget === undefined) return real.write(data);
          if (budget === 0) throw enospc();
          const part = data.subarray(0, Math.min(budget, data.length));
          budget -= part.length;
          return real.write(part);
        },
      };
      return handle;
    },
  };
  return { fs, cut: (bytes) => (budget = bytes) };
}

describe('attack: the disk fills up, then space returns', () => {
  it('refuses every append while full, tries at most once per delay, resumes when space returns', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const logger = memoryLogger();
    const log = await AuditLog.open(dir, { now: clock.now, fs, logger });
    await appendLine(log, 'intent', { n: 1 });
    fs.faults.writeError = enospc;
    await expect(appendLine(log, 'intent', { n: 2 })).rejects.toMatchObject({
      code: 'write_failed',
    });

    // Full: a flood of appends writes nothing before the first try is due …
    const writes = fs.logWrites;
    for (let n = 0; n < 50; n += 1) {
      await expect(appendLine(log, 'intent', { n })).rejects.toMatchObject({
        code: 'write_failed',
      });
    }
    expect(fs.logWrites).toBe(writes);
    // … and then one try, which fails while the disk is still full.
    clock.advance(PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', { n: 3 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    expect(fs.logWrites).toBe(writes + 1);
    await expect(appendLine(log, 'intent', { n: 4 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    expect(fs.logWrites).toBe(writes + 1);

    // Space returns: the next try (after the doubled delay) resumes, and this append runs.
    fs.faults.writeError = undefined;
    clock.advance(PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', { n: 5 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    clock.advance(PROBE_DELAY_MS);
    const resumed = await appendLine(log, 'intent', { n: 6 });
    expect(resumed.seq).toBe(3);
    expect((await appendLine(log, 'outcome', { n: 6 })).seq).toBe(4);
    await log.close();

    const lines = records(dir);
    expect(lines.map((r) => r.event)).toEqual(['intent', 'recovery', 'intent', 'outcome']);
    expect(lines[1]).toMatchObject({
      outage: { since: new Date(T0).toISOString(), cause: 'ENOSPC', refused_appends: 54 },
    });
    expect(lines[1]).not.toHaveProperty('torn');
    expect(logger.lines.join('\n')).toMatch(/audit log resumed/);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 4, checkpoint: { seq: 4 } });
    // A restart accepts the log as it is.
    const reopened = await AuditLog.open(dir, { now: clock.now });
    expect(reopened.head.seq).toBe(4);
    await reopened.close();
  });

  it('a line cut mid-write is left in place and named by the recovery record', async () => {
    const dir = tempDir();
    const disk = cuttingFs();
    const clock = manualClock();
    const log = await AuditLog.open(dir, { now: clock.now, fs: disk.fs });
    await appendLine(log, 'intent', { n: 1 });
    disk.cut(40);
    await expect(appendLine(log, 'intent', { n: 2, path: 'Docs/x' })).rejects.toMatchObject({
      code: 'write_failed',
    });
    // The try while full adds a few more torn bytes; they are covered too.
    disk.cut(7);
    clock.advance(PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', { n: 3 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    disk.cut(undefined);
    clock.advance(MAX_PROBE_DELAY_MS);
    expect((await appendLine(log, 'intent', { n: 4 })).seq).toBe(3);
    await log.close();

    const text = logLines(dir);
    // intent, the 40 torn bytes, the try's 6 (after its newline), recovery, intent
    expect(text).toHaveLength(5);
    const recovery = JSON.parse(text[3] as string) as Record<string, unknown>;
    expect(recovery).toMatchObject({ event: 'recovery', seq: 2, torn: { bytes: 47 } });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3 });
    const reopened = await AuditLog.open(dir, { now: clock.now });
    expect(reopened.head.seq).toBe(3);
    expect(reopened.warnings).toEqual([]);
    await reopened.close();
  });

  it('whole records of a batch whose fsync failed are kept, and named unconfirmed', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const log = await AuditLog.open(dir, { now: clock.now, fs });
    await appendLine(log, 'intent', { n: 1 });
    fs.faults.syncError = () => errnoError('ENOSPC', 'no space left on device, fsync');
    const batch = [2, 3].map((n) => appendLine(log, 'intent', { n }).catch((e: unknown) => e));
    for (const r of await Promise.all(batch)) expect(r).toMatchObject({ code: 'write_failed' });
    fs.faults.syncError = undefined;
    clock.advance(PROBE_DELAY_MS);
    expect((await appendLine(log, 'intent', { n: 4 })).seq).toBe(5);
    await log.close();
    const lines = records(dir);
    expect(lines.map((r) => r.event)).toEqual(['intent', 'intent', 'intent', 'recovery', 'intent']);
    expect(lines[3]).toMatchObject({ outage: { unconfirmed: { from: 2, to: 3 } } });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 5 });
  });

  it('appends that come together share one try: all refused while full, all written after', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const log = await AuditLog.open(dir, { now: clock.now, fs });
    fs.faults.writeError = enospc;
    await expect(appendLine(log, 'intent', { n: 0 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    clock.advance(PROBE_DELAY_MS);
    const writes = fs.logWrites;
    const full = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((n) => appendLine(log, 'intent', { n })),
    );
    expect(full.every((r) => r.status === 'rejected')).toBe(true);
    expect(fs.logWrites).toBe(writes + 1);
    fs.faults.writeError = undefined;
    clock.advance(2 * PROBE_DELAY_MS);
    const after = await Promise.all([6, 7, 8, 9, 10].map((n) => appendLine(log, 'intent', { n })));
    expect(after.map((r) => r.seq).sort((x, y) => x - y)).toEqual([2, 3, 4, 5, 6]);
    await log.close();
    const lines = records(dir);
    expect(lines.filter((r) => r.event === 'recovery')).toHaveLength(1);
    expect(lines[0]).toMatchObject({ event: 'recovery', outage: { refused_appends: 6 } });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 6 });
  });

  it('a checkpoint that could not be written resumes the same way', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const logger = memoryLogger();
    const log = await AuditLog.open(dir, { now: clock.now, fs, logger });
    fs.faults.checkpointWriteError = () => {
      return enospc();
    };
    await appendLine(log, 'intent', { n: 1 });
    // The failure is the log's once it is said (its write is tried a few awaits earlier).
    await until('the quiet checkpoint write to fail the log', () =>
      logger.lines.some((l) => l.includes('audit log failed')),
    );
    await expect(appendLine(log, 'intent', { n: 2 })).rejects.toMatchObject({
      code: 'write_failed',
    });
    fs.faults.checkpointWriteError = undefined;
    clock.advance(PROBE_DELAY_MS);
    expect((await appendLine(log, 'intent', { n: 3 })).seq).toBe(3);
    await log.close();
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3, checkpoint: { seq: 3 } });
  });
});

describe('attack: the disk fails in another way (no resume)', () => {
  it('an I/O error holds the log failed however long one waits', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const log = await AuditLog.open(dir, { now: clock.now, fs });
    fs.faults.syncError = () => errnoError('EIO', 'i/o error, fsync');
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    fs.faults.syncError = undefined;
    const writes = fs.logWrites;
    clock.advance(10 * MAX_PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', {})).rejects.toThrow(/restart the broker/);
    expect(fs.logWrites).toBe(writes);
    await log.close();
  });

  it('a full disk followed by an I/O error on the try holds too', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const clock = manualClock();
    const log = await AuditLog.open(dir, { now: clock.now, fs });
    fs.faults.writeError = enospc;
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    fs.faults.writeError = () => errnoError('EIO', 'i/o error, write');
    clock.advance(PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    fs.faults.writeError = undefined;
    const writes = fs.logWrites;
    clock.advance(10 * MAX_PROBE_DELAY_MS);
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    expect(fs.logWrites).toBe(writes);
    await log.close();
  });
});
