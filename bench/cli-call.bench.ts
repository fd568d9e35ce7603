/**
 * The fixed cost of one `broker` command: a 1 KiB fetch as a whole CLI process (the
 * agent's file, dist/broker-cli.mjs, run by plain node, as on an agent's host) against
 * `curl` GETting the same file from the same fake Nextcloud into a file. Rounds are
 * interleaved; every figure is spawn → exit, measured from this process.
 *
 * Beside it, in the same rounds, what the figure is made of:
 * - `node -e ''`: node's own start-up, which any node CLI pays and curl does not;
 * - the protocol floor (lib/ticket-fetch.mjs): a node process making just the two
 *   requests a fetch makes (the `read` call, the blob GET on the same connection) and
 *   writing the bytes, without the CLI's checks, hashing, fsyncs and record;
 * - the same fetch through `npx broker` (what an agent pays when told to use npx) and
 *   through the tsc-compiled, unbundled CLI (the same code as a few dozen modules).
 *
 * Fresh targets every round (a new staging folder, a new curl output file), so every
 * fetch transfers: none is answered `unchanged`. When a real Nextcloud is set up (NC_URL,
 * NC_USER, NC_APP_PASSWORD, as for test/real), the same rounds run against it too, on
 * Bench/small.bin of that user.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bench, BenchRow } from './harness.js';
import { compiledCli } from './lib/build.js';
import { median, round } from './lib/stats.js';
import { cliBundle } from '../support/cli-bundle.js';
import { connectMcp, grantViaConsole } from '../support/mcp.js';
import { shippedNodeFlags } from '../support/node-flags.js';
import {
  brokerEnv,
  cliArgs,
  ROOT,
  spawnBroker,
  spawnFakeNextcloud,
  writeBrokerConfig,
} from '../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../support/tokens.js';

const ROUNDS = Number(process.env.BENCH_CLI_CALL_ROUNDS ?? 15);
const TARGET_RATIO = 2.5;
const TICKET_FETCH = join(ROOT, 'bench', 'lib', 'ticket-fetch.mjs');
const REPO_BUNDLE = join(ROOT, 'dist', 'broker-cli.mjs');

/** Runs `command args` to its end; resolves with the wall time (ms). Fails on a non-zero exit. */
function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`));
    });
  });
}

function hasCurl(): Promise<boolean> {
  return timed('curl', ['--version'], {}).then(
    () => true,
    () => false,
  );
}

/** A Nextcloud to measure against: where its 1 KiB file is, and how to reach it. */
interface Target {
  /** e.g. "fake Nextcloud". */
  readonly label: string;
  readonly url: string;
  readonly user: string;
  readonly password: string;
}

const fileUrlOf = (t: Target): string =>
  `${t.url}/remote.php/dav/files/${encodeURIComponent(t.user)}/Bench/small.bin`;

/** Puts the 1 KiB file on a real Nextcloud (MKCOL may answer 405: the folder exists). */
async function seedReal(t: Target): Promise<void> {
  const auth = {
    authorization: `Basic ${Buffer.from(`${t.user}:${t.password}`).toString('base64')}`,
  };
  await fetch(fileUrlOf(t).replace(/\/small\.bin$/, ''), { method: 'MKCOL', headers: auth });
  const put = await fetch(fileUrlOf(t), { method: 'PUT', headers: auth, body: randomBytes(1024) });
  if (!put.ok) throw new Error(`seeding ${fileUrlOf(t)}: HTTP ${put.status}`);
}

/** The rounds against one Nextcloud, through a broker started for it. */
async function measure(
  t: Target,
  tmp: string,
  bundle: string,
): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const compiled = compiledCli();
  mkdirSync(tmp, { recursive: true });
  const config = writeBrokerConfig(tmp, {
    instances: { personal: t.url },
    username: t.user,
    dataDir: join(tmp, 'data'),
  });
  const broker = await spawnBroker(config, {
    ...(compiled === undefined ? {} : { compiledMain: compiled }),
    nodeArgs: shippedNodeFlags(ROOT),
    env: { ...brokerEnv(), BENCH_NC_PASSWORD: t.password },
  });
  const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  try {
    await grantViaConsole(agent, broker.type, 'personal', [{ path: 'Bench', mode: 'read' }]);
    const cliEnv = (stage: string): NodeJS.ProcessEnv => ({
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
      BROKER_STAGE_DIR: stage,
    });
    const fetchArgs = ['fetch', 'personal:Bench/small.bin'];
    // What each round runs, by name; `npx broker` runs the repository's own build.
    const withNpx = existsSync(REPO_BUNDLE);
    const runs: Record<string, (r: string) => Promise<number>> = {
      curl: (r) =>
        timed(
          'curl',
          [
            '-sS',
            '-f',
            '-u',
            `${t.user}:${t.password}`,
            '-o',
            join(tmp, `curl-${r}`),
            fileUrlOf(t),
          ],
          {},
        ),
      node: () => timed(process.execPath, ['-e', ''], {}),
      floor: (r) =>
        timed(
          process.execPath,
          [
            TICKET_FETCH,
            broker.url,
            TRANSFER_TOKEN,
            'personal',
            'Bench/small.bin',
            join(tmp, `floor-${r}`),
          ],
          {},
        ),
      bundle: (r) =>
        timed(process.execPath, [bundle, ...fetchArgs], cliEnv(join(tmp, `stage-bundle-${r}`))),
      ...(compiled === undefined
        ? {}
        : {
            compiled: (r: string) =>
              timed(
                process.execPath,
                [...cliArgs(compiled), ...fetchArgs],
                cliEnv(join(tmp, `stage-compiled-${r}`)),
              ),
          }),
      ...(withNpx
        ? {
            npx: (r: string) =>
              timed('npx', ['--offline', 'broker', ...fetchArgs], {
                ...cliEnv(join(tmp, `stage-npx-${r}`)),
                npm_config_update_notifier: 'false',
              }),
          }
        : {}),
    };
    const names = Object.keys(runs);
    const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    // One unmeasured round warms the page cache, the broker and the server.
    for (const name of names) await runs[name]?.('warm');
    for (let r = 0; r < ROUNDS; r += 1) {
      // Interleaved, and rotated so no kind always runs right after another.
      for (let k = 0; k < names.length; k += 1) {
        const name = names[(r + k) % names.length] ?? '';
        const run = runs[name];
        if (run !== undefined) times[name]?.push(await run(String(r)));
      }
    }
    const m = (name: string): number => median(times[name] ?? []);
    const curl = m('curl');
    const fetched = m('bundle');
    const against = `${t.label}: `;
    const rows: BenchRow[] = [
      {
        metric: `${against}1 KiB fetch, whole CLI process (\`node broker-cli.mjs fetch\`)`,
        value: fetched,
        unit: 'ms',
        baseline: { name: 'curl GET to a file', value: curl },
        target: `≤ ${TARGET_RATIO}× curl`,
        met: fetched <= TARGET_RATIO * curl,
      },
      {
        metric: `${against}floor: node's own start-up (\`node -e ''\`)`,
        value: m('node'),
        unit: 'ms',
        baseline: { name: 'curl GET to a file', value: curl },
        target: 'informational',
      },
      {
        metric: `${against}floor: the fetch's two requests from a bare node process`,
        value: m('floor'),
        unit: 'ms',
        baseline: { name: 'curl GET to a file', value: curl },
        target: 'informational: the least a node client of the protocol pays',
      },
      {
        metric: `${against}the same fetch, unbundled (tsc output, a few dozen modules)`,
        value: m('compiled'),
        unit: 'ms',
        baseline: { name: 'the bundle', value: fetched },
        target: 'informational',
      },
      {
        metric: `${against}the same fetch through \`npx broker\``,
        value: m('npx'),
        unit: 'ms',
        baseline: { name: '`node broker-cli.mjs`', value: fetched },
        target: `informational: npx adds ${round(m('npx') - fetched, 0)} ms per command`,
      },
    ].filter((row) => Number.isFinite(row.value));
    const perRound = names
      .map((n) => `${n}: ${(times[n] ?? []).map((x) => round(x, 0)).join(', ')}`)
      .join('; ');
    return {
      rows,
      notes: [
        `${against}medians of ${ROUNDS} interleaved rounds after one warm-up round, spawn → exit in ms. Per round — ${perRound}. The CLI's own work on top of the protocol floor (its checks, sha256, two fsyncs, its record): ${round(fetched - m('floor'), 0)} ms.`,
        ...(withNpx
          ? []
          : ['`npx broker` not measured: dist/broker-cli.mjs is missing (run `npm run build`).']),
      ],
    };
  } finally {
    await agent.close();
    await broker.stop();
  }
}

const bench: Bench = async () => {
  const title = '1 KiB fetch: the whole `broker` process vs `curl` (fixed cost of a command)';
  if (!(await hasCurl())) {
    return {
      title,
      rows: [],
      notes: ['curl is not installed: nothing measured (apt-get install curl).'],
    };
  }
  const tmp = mkdtempSync(join(tmpdir(), 'broker-cli-call-bench-'));
  const root = join(tmp, 'nextcloud');
  mkdirSync(join(root, 'Bench'), { recursive: true });
  writeFileSync(join(root, 'Bench', 'small.bin'), randomBytes(1024));
  const bundle = await cliBundle();
  const fake = await spawnFakeNextcloud({ root });
  try {
    const fakeTarget = {
      label: 'fake Nextcloud',
      url: fake.url,
      user: 'alice',
      password: APP_PASSWORD,
    };
    const onFake = await measure(fakeTarget, join(tmp, 'fake'), bundle);
    const real = realNextcloud();
    let onReal: { rows: BenchRow[]; notes: string[] } = {
      rows: [],
      notes: ['No real Nextcloud set up (NC_URL unset): the real-server rows are left out.'],
    };
    if (real !== undefined) {
      await seedReal(real);
      onReal = await measure(real, join(tmp, 'real'), bundle);
    }
    const nodeStart = onFake.rows.find((r) => r.metric.includes("node's own start-up"));
    return {
      title,
      rows: [...onFake.rows, ...onReal.rows],
      notes: [
        ...onFake.notes,
        ...onReal.notes,
        'Every process is spawned from this one and timed spawn → exit; the broker (compiled, with the node flags it ships with) and the fake Nextcloud run as their own processes. Fresh targets every round (a new staging folder, a new curl output file): every fetch transfers, none is `unchanged`.',
        `What bounds the ratio: a node process takes ${round(nodeStart?.value ?? NaN, 0)} ms to start and exit here, before it does anything, while curl's whole GET from the fake is one loopback request; on top of that the broker does its work per fetch (the read call: wall, grant lookup, its audit lines fsynced, no request to Nextcloud; then the blob GET: the same checks again and one GET relayed from Nextcloud with both sides hashing). The floor rows are these alone, with nothing of the CLI. Against a real Nextcloud its own time per request (PHP) enters curl's figure once and the broker's once too: a fetch is one GET to Nextcloud (a PROPFIND before it was dropped in the second wave; the folder check rides on the GET's ETag).`,
        "`npx broker` runs the repository's build (bin/broker.js → dist/broker-cli.mjs); the difference is npm's own start-up, paid by every command an agent runs through npx (docs/clients.md: put `broker` on the PATH instead).",
        `Load average at the end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')} (the machine is shared).`,
      ],
    };
  } finally {
    await fake.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
};

/** The real Nextcloud of test/real (NC_URL, NC_USER, NC_APP_PASSWORD), if one is set up. */
function realNextcloud(): Target | undefined {
  const url = process.env.NC_URL ?? '';
  const user = process.env.NC_USER ?? '';
  const password = process.env.NC_APP_PASSWORD ?? '';
  if (url === '' || user === '' || password === '') return undefined;
  return { label: 'real Nextcloud', url: url.replace(/\/+$/, ''), user, password };
}

export default bench;
