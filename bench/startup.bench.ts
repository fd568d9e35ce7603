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
import { pathToFileURL } from 'node:url';
import type { Bench } from './harness.js';
import { compiledCli } from './lib/build.js';
import { memoryOf } from './lib/processes.js';
import { shippedNodeFlags } from '../support/node-flags.js';
import { median, round } from './lib/stats.js';
import { brokerEnv, cliArgs, ROOT, writeBrokerConfig } from '../support/processes.js';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
/** The flags `npm start`, the Dockerfile and the runbook run the daemon with. */
const SHIPPED_FLAGS = shippedNodeFlags(ROOT);

/** RSS (MiB) of a fresh node process after importing `specifier` (nothing when ''). */
async function importFootprint(specifier: string): Promise<number> {
  const code = `${specifier === '' ? '' : `await import(${JSON.stringify(specifier)});`} await new Promise((r) => setTimeout(r, 300)); process.stdout.write(String(process.memoryUsage().rss));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  return Number(out) / (1024 * 1024);
}
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
  nodeArgs: readonly string[] = [],
): Promise<{ ms: number; rssMiB: number; peakMiB: number }> {
  const config = writeBrokerConfig(dir, {
    instances: { personal: 'http://127.0.0.1:9' },
    port,
    dataDir: join(dir, `data-${port}`),
    logLevel: 'warn',
  });
  const t = performance.now();
  const child = spawn(
    process.execPath,
    [...nodeArgs, ...cliArgs(compiled), 'serve', '--config', config],
    {
      cwd: ROOT,
      env: brokerEnv(),
      stdio: ['pipe', 'ignore', 'pipe'],
    },
  );
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
    const small: number[] = [];
    for (let i = 0; i < 3; i += 1)
      small.push((await brokerStart(dir, PORT_BASE + 200 + i, compiled, SHIPPED_FLAGS)).rssMiB);
    // What the idle figure is made of: a fresh node importing one thing at a time.
    const built = compiled === undefined ? undefined : join(compiled, '..', '..');
    const footprints: [string, string][] = [
      ['node alone', ''],
      ['express', 'express'],
      ['MCP SDK server', '@modelcontextprotocol/sdk/server/streamableHttp.js'],
      ['better-sqlite3', 'better-sqlite3'],
      ['matrix-js-sdk', 'matrix-js-sdk'],
    ];
    if (built !== undefined) {
      footprints.push(
        [
          'broker/app.js (daemon without main)',
          pathToFileURL(join(built, 'broker', 'app.js')).href,
        ],
        ['broker/main.js (everything)', pathToFileURL(join(built, 'broker', 'main.js')).href],
      );
    }
    const sizes: string[] = [];
    for (const [label, spec] of footprints)
      sizes.push(`${label} ${round(await importFootprint(spec), 0)}`);
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
        {
          metric: `idle RSS with node ${SHIPPED_FLAGS.join(' ')} (as shipped)`,
          value: median(small),
          unit: 'MiB',
          baseline: { name: 'default flags', value: rss },
          target: '< 100 MiB',
          met: median(small) < 100,
        },
      ],
      notes: [
        `Medians of ${RUNS} runs${compiled === undefined ? ' (from source via tsx: the compiled build failed)' : ' of the compiled build'}. Start-up per run: ${runs.map((r) => round(r.ms, 0)).join(', ')} ms; node -e '': ${floor.map((x) => round(x, 0)).join(', ')} ms; idle RSS: ${runs.map((r) => round(r.rssMiB, 0)).join(', ')} MiB (start-up peak ${round(median(runs.map((r) => r.peakMiB)), 0)} MiB).`,
        `From source through tsx (development only): ${fromSource.map((x) => round(x, 0)).join(', ')} ms.`,
        `RSS of a fresh node process after importing (MiB): ${sizes.join('; ')}.`,
        `What limits idle memory: the modules the daemon loads (footprints above) and V8's young generation grown during start-up; the shipped --max-semi-space-size=4 caps the latter (row above) with no code change.`,
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
