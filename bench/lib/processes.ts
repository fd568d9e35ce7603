/**
 * Processes only the benchmarks run or measure: the contract floor's relay, and the CPU
 * time and memory of a live process read from /proc.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, waitFor, wrap, type Child } from '../../support/processes.js';

export const MAX_RSS_PRELOAD = join(ROOT, 'bench', 'lib', 'report-max-rss.mjs');

export const FLOOR_RELAY_MAIN = join(ROOT, 'bench', 'lib', 'floor-relay.mjs');

/**
 * The contract-floor relay (floor-relay.mjs) in its own process, relaying `fileUrl`;
 * `nodeArgs` are the broker's, so the floor runs under the same V8 settings.
 */
export async function spawnFloorRelay(
  fileUrl: string,
  user: string,
  password: string,
  nodeArgs: readonly string[] = [],
  chunkBytes?: number,
): Promise<Child & { readonly url: string }> {
  const chunk = chunkBytes === undefined ? [] : [String(chunkBytes)];
  const c = wrap(
    spawn(process.execPath, [...nodeArgs, FLOOR_RELAY_MAIN, fileUrl, user, password, ...chunk], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const url = await waitFor(
    c,
    'floor relay',
    () => /listening on (http:\/\/\S+)/.exec(c.stdout())?.[1],
    10_000,
  );
  return { ...c, url };
}

/** CPU time (user + system, seconds) a live process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 here; in ticks
    // of 100 Hz on Linux (USER_HZ).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Peak (VmHWM) and current (VmRSS) resident memory of a live process, in MiB. */
export function memoryOf(pid: number): { peakMiB: number; rssMiB: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number =>
      Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(text)?.[1] ?? NaN);
    return { peakMiB: kb('VmHWM') / 1024, rssMiB: kb('VmRSS') / 1024 };
  } catch {
    return undefined;
  }
}
