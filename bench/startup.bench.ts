/**
 * `broker serve` start-up: from spawning the process to the first healthy `GET /health`
 * (polled every 10 ms), and the resident memory once idle. Baseline in the same run:
 * `node -e ''` from spawn to exit (the floor any node program pays).
 *
 * The broker runs as it ships (compiled by tsc; see lib/build.ts) with a console
 * approval gateway, one Nextcloud instance (a closed loopback port: start-up never
 * contacts Nextcloud) and an empty data folder each run (fresh audit log, grant DB).
 * The tsx (from source) start-up is reported as a note only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bench } from './harness.js';
import { compiledCli } from './lib/build.js';
import { brokerEnv, cliArgs, memoryOf, ROOT, writeBrokerConfig } from './lib/processes.js';
import { median, round } from './lib/stats.js';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
const PORT_BASE = 30_000 + (process.pid % 20_000);

async function nodeFloor(): Promise<number> {
  const t = performance.now();
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return performance.now() - t;
}

/** Spawns `broker serve` on a fixed port and polls /health; returns ms to healthy and idle RSS. */
async function brokerStart(
  dir: string,
  port: number,
  compiled: string | undefined,
): Promise<{ ms: number; rssMiB: number; peakMiB: number }> {
  const config = writeBrokerConfig(dir, {
    instances: { personal: 'http://127.0.0.1:9' },
    port,
    dataDir: join(dir, `data-${port}`),
    logLevel: 'warn',
  });
  const t = performance.now();
  const child = spawn(process.execPath, [...cliArgs(compiled), 'serve', '--config', config], {
    cwd: ROOT,
    env: brokerEnv(),
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    for (;;) {
      if (exited) throw new Error(`broker exited during start-up:\n${stderr}`);
      if (performance.now() - t > 20_000)
        throw new Error(`broker not healthy after 20 s:\n${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`)
        .then(async (r) => r.ok && ((await r.json()) as { status?: string }).status === 'ok')
        .catch(() => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const ms = performance.now() - t;
    // Idle: let start-up garbage settle before reading the resident set.
    await new Promise((r) => setTimeout(r, 1_000));
    const mem = memoryOf(child.pid ?? -1);
    return { ms, rssMiB: mem?.rssMiB ?? Number.NaN, peakMiB: mem?.peakMiB ?? Number.NaN };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (exited ? r(undefined) : child.once('exit', r)));
  }
}

const bench: Bench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'broker-startup-bench-'));
  const compiled = compiledCli();
  try {
    const floor: number[] = [];
    const runs: { ms: number; rssMiB: number; peakMiB: number }[] = [];
    const fromSource: number[] = [];
    // One unmeasured start warms the page cache for node, the build and node_modules.
    await brokerStart(dir, PORT_BASE, compiled);
    for (let i = 0; i < RUNS; i += 1) {
      floor.push(await nodeFloor());
      runs.push(await brokerStart(dir, PORT_BASE + 1 + i, compiled));
    }
    for (let i = 0; i < 3; i += 1)
      fromSource.push((await brokerStart(dir, PORT_BASE + 100 + i, undefined)).ms);
    const ms = median(runs.map((r) => r.ms));
    const rss = median(runs.map((r) => r.rssMiB));
    const base = median(floor);
    return {
      title: '`broker serve` start-up and idle memory',
      rows: [
        {
          metric: 'spawn → /health ok',
          value: ms,
          unit: 'ms',
          baseline: { name: "node -e ''", value: base },
          target: '< 1000 ms',
          met: ms < 1000,
        },
        {
          metric: 'idle RSS (1 s after healthy)',
          value: rss,
          unit: 'MiB',
          target: '< 100 MiB',
          met: rss < 100,
        },
      ],
      notes: [
        `Medians of ${RUNS} runs${compiled === undefined ? ' (from source via tsx: the compiled build failed)' : ' of the compiled build'}. Start-up per run: ${runs.map((r) => round(r.ms, 0)).join(', ')} ms; node -e '': ${floor.map((x) => round(x, 0)).join(', ')} ms; idle RSS: ${runs.map((r) => round(r.rssMiB, 0)).join(', ')} MiB (start-up peak ${round(median(runs.map((r) => r.peakMiB)), 0)} MiB).`,
        `From source through tsx (development only): ${fromSource.map((x) => round(x, 0)).join(', ')} ms.`,
        `Load average at the end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')} (the machine is shared).`,
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

export default bench;
