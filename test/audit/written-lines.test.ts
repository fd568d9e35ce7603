/**
 * Lines appended with `appendWritten` (the outcome of an operation that changed nothing):
 * answered once they are in the file, in their place in the chain, and fsynced by the
 * next batch, SYNC_SOON_MS later, or at close. What must not move: every `append` still
 * resolves only once its own line (and every line before it) is fsynced, and the
 * checkpoint never names a line that is not.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit } from '../../broker/audit/index.js';
import type { AuditEvent } from '../../broker/audit/events.js';
import { QUIET_MS } from '../../broker/audit/checkpointer.js';
import { SYNC_SOON_MS } from '../../broker/audit/writer.js';
import { until } from '../../support/until.js';
import { appendLine } from '../../support/audit-line.js';
import { checkpointPath, errnoError, InstrumentedFs, tempDir, tickingClock } from './helpers.js';

const outcome = (fields: Record<string, unknown> = {}) =>
  ({ event: 'outcome', ...fields }) as unknown as AuditEvent;

const hasLine = (bytes: Buffer, hash: string): boolean =>
  bytes.toString('utf8').includes(`"hash":"${hash}"`);

async function opened(faults: InstrumentedFs['faults'] = {}, writeTimeoutMs?: number) {
  const dir = tempDir();
  const fs = new InstrumentedFs();
  const log = await AuditLog.open(dir, {
    now: tickingClock(),
    fs,
    ...(writeTimeoutMs === undefined ? {} : { writeTimeoutMs }),
  });
  fs.faults = faults;
  return { dir, fs, log };
}

describe('an outcome line written before its fsync (appendWritten)', () => {
  it('resolves once the line is in the file, before any fsync of it', async () => {
    const { fs, log } = await opened({ syncDelayMs: 50 });
    const syncs = fs.logSyncs;
    const rec = await log.appendWritten(outcome({ n: 1 }));
    expect(hasLine(fs.written, rec.hash)).toBe(true);
    expect(hasLine(fs.synced, rec.hash)).toBe(false);
    expect(fs.logSyncs).toBe(syncs);
    await log.close();
  });

  it('the next append is answered only once both lines are fsynced, by one fsync', async () => {
    const { fs, log } = await opened();
    const syncs = fs.logSyncs;
    const first = await log.appendWritten(outcome());
    const intent = await appendLine(log, 'intent', { n: 2 });
    expect(intent.prev).toBe(first.hash);
    expect(hasLine(fs.synced, first.hash)).toBe(true);
    expect(hasLine(fs.synced, intent.hash)).toBe(true);
    expect(fs.logSyncs - syncs).toBe(1);
    await log.close();
  });

  it(`with no append after it, it is fsynced by itself (after ${SYNC_SOON_MS} ms), and the checkpoint follows`, async () => {
    const { dir, fs, log } = await opened();
    const rec = await log.appendWritten(outcome());
    await until('the line to be fsynced', () => hasLine(fs.synced, rec.hash), undefined, 2);
    await until(
      'the checkpoint to name it',
      () => readFileSync(checkpointPath(dir), 'utf8').includes(`"seq":${rec.seq}`),
      5_000,
      5,
    );
    await log.close();
  });

  it('close() leaves it durable', async () => {
    const { dir, fs, log } = await opened({ syncDelayMs: 5 });
    const rec = await log.appendWritten(outcome());
    await log.close();
    expect(hasLine(fs.synced, rec.hash)).toBe(true);
    expect(fs.synced.length).toBe(fs.written.length);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, head: { seq: rec.seq } });
  });

  it('no durable append resolves before its own line was fsynced, mixed with written ones', async () => {
    const { dir, fs, log } = await opened({ syncDelayMs: 3 });
    const violations: string[] = [];
    const waves: Promise<unknown>[] = [];
    for (let w = 0; w < 5; w += 1) {
      for (let i = 0; i < 20; i += 1) {
        waves.push(
          i % 3 === 0
            ? log.appendWritten(outcome({ w, i })).then((rec) => {
                if (!hasLine(fs.written, rec.hash)) violations.push(`written ${rec.seq}`);
              })
            : appendLine(log, 'intent', { w, i }).then((rec) => {
                if (!hasLine(fs.synced, rec.hash)) violations.push(`durable ${rec.seq}`);
              }),
        );
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(waves);
    await log.close();
    expect(violations).toEqual([]);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 100 });
  });
});

describe('attack: a crash or a failing disk after a line was answered unsynced', () => {
  it('the checkpoint never names a line whose fsync has not completed', async () => {
    const { dir, fs, log } = await opened({}, 300);
    const durable = await appendLine(log, 'intent', {});
    await until(
      'the checkpoint to reach the durable line',
      () => readFileSync(checkpointPath(dir), 'utf8').includes(`"seq":${durable.seq}`),
      5_000,
      5,
    );
    fs.faults.syncHangs = true;
    const syncs = fs.logSyncs;
    const rec = await log.appendWritten(outcome());
    // Its own fsync (SYNC_SOON_MS later) hangs until the write timeout fails the log;
    // the next append waits for that and is refused.
    await until('its fsync to begin', () => fs.logSyncs > syncs, undefined, 2);
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'timeout' });
    await new Promise((r) => setTimeout(r, 2 * QUIET_MS));
    expect(readFileSync(checkpointPath(dir), 'utf8')).toContain(`"seq":${durable.seq}`);
    expect(readFileSync(checkpointPath(dir), 'utf8')).not.toContain(`"seq":${rec.seq}`);
    await log.close();
  });

  it('a failed fsync of it fails the log: every later append is refused', async () => {
    const { fs, log } = await opened();
    fs.faults.syncError = () => errnoError('EIO', 'i/o error');
    const syncs = fs.logSyncs;
    await log.appendWritten(outcome());
    await until('its fsync to be tried', () => fs.logSyncs > syncs, undefined, 2);
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'write_failed' });
    await log.close();
  });
});
