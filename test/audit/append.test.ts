import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AuditError,
  AuditLog,
  canonicalJson,
  sha256Hex,
  verifyAudit,
  ZERO_HASH,
} from '../../broker/audit/index.js';
import { MAX_LAG_MS, QUIET_MS } from '../../broker/audit/checkpointer.js';
import { until } from '../../support/until.js';
import { checkpointPath, InstrumentedFs, logLines, T0, tempDir, tickingClock } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';
import type { AuditEventName } from '../../broker/audit/events.js';

describe('audit append: record format (docs/contracts.md §4)', () => {
  it('writes one canonical JSON line per record with seq, ts, prev and hash', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    const a = await appendLine(log, 'intent', { tool: 'read', path: 'Docs/a.txt', grant_ids: [3] });
    const b = await appendLine(log, 'outcome', { ok: true });
    await log.close();

    expect(a).toMatchObject({
      seq: 1,
      ts: new Date(T0).toISOString(),
      prev: ZERO_HASH,
      event: 'intent',
    });
    expect(b).toMatchObject({ seq: 2, ts: new Date(T0 + 1).toISOString(), prev: a.hash });
    const lines = logLines(dir);
    expect(lines).toHaveLength(2);
    for (const [i, line] of lines.entries()) {
      const rec = JSON.parse(line) as Record<string, unknown>;
      expect(line).toBe(canonicalJson(rec));
      const { hash, ...body } = rec;
      expect(hash).toBe(sha256Hex(canonicalJson(body)));
      expect(rec.seq).toBe(i + 1);
    }
    expect(readFileSync(checkpointPath(dir), 'utf8')).toBe(`{"hash":"${b.hash}","seq":2}\n`);
    // The chain's verdict (these lines exercise the bytes, not the events: reading.test.ts).
    expect(verifyAudit(dir)).toMatchObject({
      ok: true,
      records: 2,
      head: { seq: 2, hash: b.hash },
      checkpoint: { seq: 2, hash: b.hash },
    });
  });

  it('continues the chain after a reopen', async () => {
    const dir = tempDir();
    let log = await AuditLog.open(dir, { now: tickingClock() });
    const first = await appendLine(log, 'start', {});
    await log.close();
    log = await AuditLog.open(dir, { now: tickingClock() });
    expect(log.warnings).toEqual([]);
    expect(log.head).toEqual({ seq: 1, hash: first.hash });
    const second = await appendLine(log, 'stop', {});
    await log.close();
    expect(second).toMatchObject({ seq: 2, prev: first.hash });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 2 });
  });

  it('a fresh data dir gets a seq-0 checkpoint so a later missing checkpoint is never normal', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(`${dir}/nested/data`, { now: tickingClock() });
    await log.close();
    expect(readFileSync(`${dir}/nested/data/audit.checkpoint`, 'utf8')).toBe(
      `{"hash":"${ZERO_HASH}","seq":0}\n`,
    );
    expect(verifyAudit(`${dir}/nested/data`)).toMatchObject({ ok: true, records: 0 });
  });
});

describe('attack: a caller forging chain fields', () => {
  // `event` is no field a caller adds: an AuditEvent's `event` is its one name (events.ts).
  it.each(['seq', 'ts', 'prev', 'hash'])(
    'refuses a field named %s and consumes no seq',
    async (name) => {
      const dir = tempDir();
      const log = await AuditLog.open(dir, { now: tickingClock() });
      const err = await appendLine(log, 'intent', { [name]: 'x' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuditError);
      expect((err as AuditError).code).toBe('invalid_fields');
      const ok = await appendLine(log, 'intent', { fine: 1 });
      expect(ok.seq).toBe(1);
      await log.close();
    },
  );

  it('refuses a field named __proto__-style own keys only as data, never as chain fields', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    const fields = JSON.parse('{"__proto__":{"seq":99},"path":"a"}') as Record<string, unknown>;
    const rec = await appendLine(log, 'intent', fields);
    await log.close();
    expect(rec.seq).toBe(1);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 1 });
  });

  it.each([
    ['NaN', { n: Number.NaN }],
    ['a Date', { d: new Date(0) }],
    ['a bigint', { b: 1n }],
  ])(
    'refuses non-JSON values (%s) instead of writing a record that differs from the call',
    async (_n, fields) => {
      const dir = tempDir();
      const log = await AuditLog.open(dir, { now: tickingClock() });
      await expect(appendLine(log, 'intent', fields)).rejects.toMatchObject({
        code: 'invalid_fields',
      });
      expect((await appendLine(log, 'intent', {})).seq).toBe(1);
      await log.close();
    },
  );

  it('refuses an empty event name and a record over 1 MiB', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await expect(appendLine(log, '' as AuditEventName)).rejects.toMatchObject({
      code: 'invalid_fields',
    });
    await expect(appendLine(log, 'intent', { big: 'x'.repeat(1024 * 1024) })).rejects.toMatchObject(
      {
        code: 'invalid_fields',
      },
    );
    await log.close();
  });

  it('refuses a clock that returns no time, consuming no seq', async () => {
    const dir = tempDir();
    let broken = true;
    const log = await AuditLog.open(dir, { now: () => (broken ? Number.NaN : T0) });
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'invalid_fields' });
    broken = false;
    expect((await appendLine(log, 'intent', {})).seq).toBe(1);
    await log.close();
  });

  it('refuses appends after close', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await log.close();
    await expect(appendLine(log, 'intent', {})).rejects.toMatchObject({ code: 'closed' });
  });
});

describe('group commit', () => {
  it('200 concurrent appends get contiguous seqs, a valid chain and far fewer fsyncs', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    fs.faults.syncDelayMs = 2;
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    const syncsBefore = fs.logSyncs;
    const records = await Promise.all(
      Array.from({ length: 200 }, (_, i) => appendLine(log, 'intent', { i })),
    );
    await log.close();
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    const syncs = fs.logSyncs - syncsBefore;
    expect(syncs).toBeGreaterThanOrEqual(1);
    expect(syncs).toBeLessThanOrEqual(10);
    expect(fs.logWrites).toBe(syncs);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 200, head: { seq: 200 } });
  });

  it('producers that keep appending share fsyncs too (many producers, sequential each)', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    fs.faults.syncDelayMs = 1;
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    const syncsBefore = fs.logSyncs;
    await Promise.all(
      Array.from({ length: 32 }, async (_, p) => {
        for (let i = 0; i < 10; i += 1) await appendLine(log, 'intent', { p, i });
      }),
    );
    await log.close();
    expect(fs.logSyncs - syncsBefore).toBeLessThan(320 / 4);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 320 });
  });

  it('no append resolves before its own line was fsynced', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    fs.faults.syncDelayMs = 3;
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    const violations: number[] = [];
    const check = (rec: { seq: number; hash: string }): void => {
      // The line must be inside the fsynced prefix at the moment the promise resolves.
      if (!fs.synced.toString('utf8').includes(`"hash":"${rec.hash}"`)) violations.push(rec.seq);
    };
    const waves: Promise<unknown>[] = [];
    for (let w = 0; w < 5; w += 1) {
      for (let i = 0; i < 20; i += 1) waves.push(appendLine(log, 'intent', { w, i }).then(check));
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(waves);
    await log.close();
    expect(violations).toEqual([]);
    expect(fs.synced.length).toBe(fs.written.length);
  });

  it('the checkpoint waits for a quiet log, so its fsyncs stay off the next append', async () => {
    const dir = tempDir();
    const fs = new InstrumentedFs();
    const log = await AuditLog.open(dir, { now: tickingClock(), fs });
    const opened = readFileSync(checkpointPath(dir), 'utf8');
    const last = await appendLine(log, 'intent', {});
    const syncs = fs.allSyncs;
    // Half the quiet time later: the next call's append has the disk to itself.
    await new Promise((r) => setTimeout(r, QUIET_MS / 2));
    expect(fs.allSyncs).toBe(syncs);
    expect(readFileSync(checkpointPath(dir), 'utf8')).toBe(opened);
    await until(
      'the checkpoint to reach the head once the log is quiet',
      () =>
        readFileSync(checkpointPath(dir), 'utf8') === `{"hash":"${last.hash}","seq":${last.seq}}\n`,
      2_000,
      5,
    );
    await log.close();
  });

  it('under a steady stream of appends the checkpoint still follows, at most MAX_LAG_MS behind', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    const seqs: number[] = [];
    const started = performance.now();
    // Appends every 10 ms (never quiet for QUIET_MS) for 2.5 × MAX_LAG_MS.
    while (performance.now() - started < 2.5 * MAX_LAG_MS) {
      await appendLine(log, 'intent', {});
      seqs.push(JSON.parse(readFileSync(checkpointPath(dir), 'utf8')).seq as number);
      await new Promise((r) => setTimeout(r, 10));
    }
    // It was rewritten during the stream (at least twice), not once per append.
    const distinct = new Set(seqs).size;
    expect(distinct).toBeGreaterThanOrEqual(3);
    expect(distinct).toBeLessThan(seqs.length / 4);
    await log.close();
  });

  it('the checkpoint follows the durable head after each burst, without close', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await appendLine(log, 'intent', {});
    for (let i = 0; i < 30; i += 1) await appendLine(log, 'intent', { i });
    await Promise.all(Array.from({ length: 50 }, (_, i) => appendLine(log, 'intent', { i })));
    const last = await appendLine(log, 'intent', { end: true });
    const expected = `{"hash":"${last.hash}","seq":${last.seq}}\n`;
    await until(
      'the checkpoint to reach the head',
      () => readFileSync(checkpointPath(dir), 'utf8') === expected,
      2_000,
      5,
    );
    expect(readFileSync(checkpointPath(dir), 'utf8')).toBe(expected);
    expect(log.head).toEqual({ seq: last.seq, hash: last.hash });
    await log.close();
  });
});
