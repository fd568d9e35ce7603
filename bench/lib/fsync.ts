/**
 * What one durable audit append costs here when no other call shares its fsync: the
 * fsync the list target allows over a direct PROPFIND (issue 40: ≤ 1.1× it, or no more
 * than one such fsync and 2 ms over it).
 */
import { appendFile, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchRow } from '../harness.js';
import { latency } from './stats.js';

/**
 * p50 of one durable append as the audit log makes it when no other call shares its
 * fsync: a ~400-byte line written and fsynced, in the broker's data folder's file system.
 */
export async function appendFsyncP50(dir: string, n = 200): Promise<number> {
  const file = join(dir, 'fsync-floor.log');
  await appendFile(file, '');
  const handle = await open(file, 'a');
  const line = `${'x'.repeat(400)}\n`;
  const samples: number[] = [];
  try {
    for (let i = 0; i < n; i += 1) {
      const t = performance.now();
      await handle.write(line);
      await handle.sync();
      samples.push(performance.now() - t);
    }
  } finally {
    await handle.close();
  }
  return latency(samples).p50;
}

/** The list target's row: the p50 overhead over the direct PROPFIND, met either way. */
export function listTargetRow(
  metric: string,
  broker: number,
  direct: number,
  fsyncP50: number,
): BenchRow {
  const overhead = broker - direct;
  return {
    metric,
    value: overhead,
    unit: 'ms',
    baseline: { name: 'one durable audit append here (write + fsync, p50)', value: fsyncP50 },
    target: `≤ 1.1× the direct PROPFIND (${(0.1 * direct).toFixed(1)} ms), or ≤ one fsync + 2 ms`,
    met: broker <= 1.1 * direct || overhead <= fsyncP50 + 2,
  };
}

/**
 * The floor of the list overhead: a bare MCP round trip through the same broker (one that
 * touches neither Nextcloud nor the audit log) plus one durable append. No broker that
 * answers over MCP and writes its intent first can go below it.
 */
export function listFloorRow(
  metric: string,
  mcpRoundTrip: number,
  fsyncP50: number,
  overhead: number,
): BenchRow {
  return {
    metric,
    value: mcpRoundTrip + fsyncP50,
    unit: 'ms',
    baseline: { name: 'the measured overhead', value: overhead },
    target: 'informational: below it no broker of this design can go here',
  };
}
