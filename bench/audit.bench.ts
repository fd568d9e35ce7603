/**
 * Audit append throughput: the group-committed AuditLog with 1 and with 64 concurrent
 * producers, against a naive baseline (write + fsync per append, one at a time) measured
 * in the same run, in the same temp directory's file system.
 */
import { mkdtempSync, promises as fsp, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLog, ZERO_HASH } from '../broker/audit/index.js';
import { buildRecord } from '../broker/audit/record.js';
import type { Bench } from './harness.js';

const APPENDS = 3000;
const FIELDS = {
  surface: 'agent',
  tool: 'read',
  instance: 'personal',
  path: 'Documents/report.odt',
  grants: [7],
  correlation_id: 'c0ffee00',
};

/** The same records (canonical JSON, sha256 chain), each written and fsynced on its own. */
async function naive(dir: string): Promise<number> {
  const handle = await fsp.open(join(dir, `naive-${Date.now()}.log`), 'a');
  let head = { seq: 0, hash: ZERO_HASH };
  const started = performance.now();
  for (let i = 0; i < APPENDS; i += 1) {
    const { record, line } = buildRecord(head, new Date().toISOString(), 'intent', FIELDS);
    head = { seq: record.seq, hash: record.hash };
    await handle.write(`${line}\n`);
    await handle.sync();
  }
  const seconds = (performance.now() - started) / 1000;
  await handle.close();
  return APPENDS / seconds;
}

async function grouped(dir: string, producers: number): Promise<{ rate: number; p99: number }> {
  const log = await AuditLog.open(dir, { now: () => Date.now() });
  const latencies: number[] = [];
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (issued < APPENDS) {
        issued += 1;
        const t = performance.now();
        await log.append({ event: 'intent', ...FIELDS });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await log.close();
  latencies.sort((a, b) => a - b);
  return {
    rate: APPENDS / seconds,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN,
  };
}

const ROUNDS = 3;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

const bench: Bench = async () => {
  const root = mkdtempSync(join(tmpdir(), 'broker-audit-bench-'));
  try {
    // fsync speed drifts a lot on a shared disk, so the three runs are interleaved in
    // rounds and each figure is the median of its rounds.
    const naiveRates: number[] = [];
    const ones: { rate: number; p99: number }[] = [];
    const manys: { rate: number; p99: number }[] = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      naiveRates.push(await naive(root));
      ones.push(await grouped(join(root, `one-${r}`), 1));
      manys.push(await grouped(join(root, `many-${r}`), 64));
    }
    const base = median(naiveRates);
    const one = median(ones.map((x) => x.rate));
    const many = median(manys.map((x) => x.rate));
    const fmt = (xs: readonly number[]): string => xs.map((x) => Math.round(x)).join(', ');
    return {
      title: 'Audit log appends (write + fsync durable before resolve)',
      rows: [
        {
          metric: `appends/s, 1 producer (${APPENDS} appends)`,
          value: one,
          unit: 'appends/s',
          baseline: { name: 'naive write+fsync per append', value: base },
        },
        {
          metric: `appends/s, 64 producers (${APPENDS} appends)`,
          value: many,
          unit: 'appends/s',
          baseline: { name: 'naive write+fsync per append', value: base },
          target: '≥ 10× naive',
          met: many >= 10 * base,
        },
        {
          metric: 'p99 append latency, 1 producer',
          value: median(ones.map((x) => x.p99)),
          unit: 'ms',
        },
        {
          metric: 'p99 append latency, 64 producers',
          value: median(manys.map((x) => x.p99)),
          unit: 'ms',
        },
      ],
      notes: [
        `Medians of ${ROUNDS} interleaved rounds. Naive: ${fmt(naiveRates)}; 1 producer: ${fmt(ones.map((x) => x.rate))}; 64 producers: ${fmt(manys.map((x) => x.rate))} appends/s.`,
        `Temp dir ${tmpdir()}; fsync cost depends on the file system under it and on other load on the disk.`,
        'The naive baseline builds the same chained records (canonical JSON + sha256). With one producer group commit cannot share fsyncs, so it is expected near the baseline; AuditLog also updates its checkpoint (write + fsync + rename + fsync dir, coalesced, once the log is quiet for 50 ms and at least once a second) off the append path.',
      ],
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
};

export default bench;
