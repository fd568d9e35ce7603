/** Small statistics helpers shared by the benchmarks. */
import { percentile } from '../harness.js';

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

export interface Latency {
  p50: number;
  p99: number;
  n: number;
}

export function latency(samples: readonly number[]): Latency {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), n: samples.length };
}

/**
 * Runs `workers` loops that together perform `total` calls of `op`; returns each call's
 * latency (ms) and the throughput (calls/s) over the whole run.
 */
export async function closedLoop(
  workers: number,
  total: number,
  op: (worker: number, i: number) => Promise<void>,
): Promise<{ samples: number[]; perSecond: number }> {
  const samples: number[] = [];
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (issued < total) {
        const i = issued;
        issued += 1;
        const t = performance.now();
        await op(w, i);
        samples.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { samples, perSecond: total / seconds };
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
