/**
 * Transfers through the broker against a real Nextcloud, each beside its baseline in the
 * same run (issue 27's targets, and issue 40's for a new file): `broker push` of a new
 * file vs one direct PUT asking the same `X-Hash` (the verified floor; the plain PUT
 * beside it); a
 * replacing push vs a direct chunked upload with the same chunk size by a keep-alive
 * client (and vs the PUT); `broker fetch` vs a careful GET (hashes what it writes and
 * fsyncs it); one `broker fetch` of 50 files of 1 KiB vs 50 `curl`s; and the peak RSS of
 * the broker and the CLI moving the big file.
 *
 * It runs when a real server is described by the environment (bench/lib/real-server.ts)
 * and works in a folder of its own (with NC_RESET set, it empties the server before and
 * after instead). BENCH_REAL_MB sets the big file's size (default 256), BENCH_REAL_ROUNDS
 * the rounds (default 3), BENCH_REAL_ONLY a comma list of cases (new, replace, fetch, many).
 */
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bench, BenchRow } from './harness.js';
import { brokerOnRealServer } from './lib/real-broker.js';
import { runCliMeasured, runDirectMeasured, type MeasuredRun } from './lib/cli.js';
import { writeBigFile } from './lib/files.js';
import { cpuSecondsOf, memoryOf, spawnFloorRelay } from './lib/processes.js';
import { shippedNodeFlags } from '../support/node-flags.js';
import { ROOT } from '../support/processes.js';
import {
  curlGet,
  dav,
  fileUrl,
  leaveServer,
  serverChunkSize,
  serverFromEnv,
} from './lib/real-server.js';
import { median, round } from './lib/stats.js';
import { VERIFY_HASH } from '../broker/nextcloud/upload-terms.js';
import { connectMcp, grantViaConsole } from '../support/mcp.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../support/tokens.js';

const TITLE =
  'Against a real Nextcloud: transfers (push new, push replacing, fetch, 50 small files)';
const BIG_MB = Number(process.env.BENCH_REAL_MB ?? 256);
const BIG = BIG_MB * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_REAL_ROUNDS ?? 3);
const ONLY = new Set((process.env.BENCH_REAL_ONLY ?? 'new,replace,fetch,many').split(','));
const MANY = 50;
const MANY_ROUNDS = 3;
/** Also time one `broker fetch` command per file (BENCH_REAL_EACH=0 skips it: it is slow). */
const EACH = process.env.BENCH_REAL_EACH !== '0';
/** The broker's chunk size when the server announces none (transfer.chunk_size default). */
const DEFAULT_CHUNK = 16 * 1024 * 1024;

/**
 * Runs one round's steps, each after the disk has taken what earlier ones wrote (`sync`,
 * untimed), in their order on even rounds and reversed on odd ones: a step late in a
 * round otherwise pays for the writeback of the 256 MiB files before it.
 */
async function inTurn(round: number, steps: readonly (() => Promise<void>)[]): Promise<void> {
  for (const step of round % 2 === 0 ? steps : [...steps].reverse()) {
    spawnSync('sync');
    await step();
  }
}

const ok = (m: MeasuredRun, what: string): number => {
  if (m.code !== 0) throw new Error(`${what} failed (${m.code}): ${m.stderr.slice(-500)}`);
  return m.ms;
};

const bench: Bench = async () => {
  const s = serverFromEnv();
  if (s === undefined)
    return {
      title: TITLE,
      rows: [],
      notes: ['Not run: no real server is set up (NC_URL, NC_USER, NC_APP_PASSWORD).'],
    };
  const folder = `Bench-${process.pid}-${Date.now()}`;
  const tmp = mkdtempSync(join(tmpdir(), 'broker-real-transfer-'));
  const local = join(tmp, 'local');
  mkdirSync(local);
  const { broker, compiled } = await brokerOnRealServer(s, tmp);
  const brokerIdle = memoryOf(broker.child.pid ?? 0)?.rssMiB ?? Number.NaN;
  const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  const chunk = (await serverChunkSize(s)) ?? DEFAULT_CHUNK;
  const env = (stage: string) => ({
    BROKER_URL: broker.url,
    BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
    BROKER_STAGE_DIR: join(tmp, stage),
  });
  const brokerPid = broker.child.pid ?? 0;
  /** CPU seconds per GiB moved, per case: the broker's (/proc) and the CLI's (rusage). */
  const cpu = { brokerGiB: new Map<string, number[]>(), cliGiB: new Map<string, number[]>() };
  const noteCpu = (what: string, brokerSeconds: number, cliSeconds: number): void => {
    const perGiB = 1024 / BIG_MB;
    for (const [map, value] of [
      [cpu.brokerGiB, brokerSeconds * perGiB],
      [cpu.cliGiB, cliSeconds * perGiB],
    ] as const)
      map.set(what, [...(map.get(what) ?? []), value]);
  };
  const cli = async (
    args: string[],
    stage: string,
    keep = false,
    what?: string,
  ): Promise<MeasuredRun> => {
    const before = cpuSecondsOf(brokerPid);
    const m = await runCliMeasured(args, env(stage), compiled);
    ok(m, `broker ${args.slice(0, 2).join(' ')}`);
    if (what !== undefined) noteCpu(what, cpuSecondsOf(brokerPid) - before, m.cpuSeconds);
    if (!keep) rmSync(join(tmp, stage), { recursive: true, force: true });
    return m;
  };
  const direct = (
    method: Parameters<typeof runDirectMeasured>[0],
    path: string,
    file: string,
    xHash?: typeof VERIFY_HASH,
  ) =>
    runDirectMeasured(method, fileUrl(s, path), file, s.user, s.password, {
      BENCH_CHUNK_SIZE: String(chunk),
      ...(xHash === undefined ? {} : { BENCH_X_HASH: xHash }),
    }).then((m) => ({ ...m, ms: ok(m, `direct ${method}`) }));
  const times = {
    put: [] as number[],
    putVerified: [] as number[],
    pushNew: [] as number[],
    chunked: [] as number[],
    chunkedVerified: [] as number[],
    pushReplace: [] as number[],
    get: [] as number[],
    floor: [] as number[],
    fetch: [] as number[],
    curls: [] as number[],
    fetchMany: [] as number[],
    fetchEach: [] as number[],
  };
  const cliPeak: number[] = [];
  // The fetch's floor: a relay process that hashes what it passes (as the contract has the
  // broker do) in front of the careful GET; no broker, no audit, no wall, no ticket.
  const floor = ONLY.has('fetch')
    ? await spawnFloorRelay(
        fileUrl(s, `${folder}/big.bin`),
        s.user,
        s.password,
        shippedNodeFlags(ROOT),
      )
    : undefined;
  const warnings = new Set<string>();
  try {
    await dav(s, 'MKCOL', folder, [201]);
    await grantViaConsole(agent, broker.type, 'personal', [{ path: folder, mode: 'write' }]);
    const big = join(local, 'big.bin');
    await writeBigFile(big, BIG);
    // The replacement alternates between two contents, so every push has new bytes.
    const other = join(local, 'other.bin');
    copyFileSync(big, other);
    const fd = openSync(other, 'r+');
    writeSync(fd, Buffer.from('other'), 0, 5, 0);
    closeSync(fd);
    for (let r = 0; r < ROUNDS; r += 1) {
      if (ONLY.has('new'))
        await inTurn(r, [
          async () => {
            times.put.push((await direct('PUT', `${folder}/put-${r}.bin`, big)).ms);
          },
          async () => {
            times.putVerified.push(
              (await direct('PUT', `${folder}/put-hashed-${r}.bin`, big, VERIFY_HASH)).ms,
            );
          },
          async () => {
            const m = await cli(
              ['push', `personal:${folder}/pushed-${r}.bin`, big],
              `push-${r}`,
              false,
              'push new',
            );
            times.pushNew.push(m.ms);
            cliPeak.push(m.peakMiB);
            for (const w of (m.json.warnings as string[] | undefined) ?? []) warnings.add(w);
          },
        ]);
      if (ONLY.has('replace')) {
        if (r === 0) {
          await direct('PUT', `${folder}/chunked.bin`, big);
          await cli(['push', `personal:${folder}/replaced.bin`, big], 'replace', true);
        }
        // Each upload replaces its file with the other content, so every one sends new bytes.
        const next = r % 2 === 0 ? other : big;
        await inTurn(r, [
          async () => {
            times.chunked.push((await direct('CHUNKED', `${folder}/chunked.bin`, next)).ms);
          },
          async () => {
            times.chunkedVerified.push(
              (
                await direct(
                  'CHUNKED',
                  `${folder}/chunked.bin`,
                  next === big ? other : big,
                  VERIFY_HASH,
                )
              ).ms,
            );
          },
          async () => {
            const m = await cli(
              ['push', `personal:${folder}/replaced.bin`, next],
              'replace',
              true,
              'push replacing',
            );
            times.pushReplace.push(m.ms);
            cliPeak.push(m.peakMiB);
          },
        ]);
        if (!ONLY.has('new'))
          times.put.push((await direct('PUT', `${folder}/put-${r}.bin`, big)).ms);
      }
      if (ONLY.has('fetch')) {
        if (r === 0) await direct('PUT', `${folder}/big.bin`, big);
        await inTurn(r, [
          async () => {
            times.get.push(
              (await direct('GET-SHA256', `${folder}/big.bin`, join(local, 'got.bin'))).ms,
            );
            rmSync(join(local, 'got.bin'), { force: true });
          },
          async () => {
            if (floor === undefined) return;
            const floored = await runDirectMeasured(
              'GET-SHA256',
              floor.url,
              join(local, 'floor.bin'),
              s.user,
              s.password,
            );
            times.floor.push(ok(floored, 'the floor relay GET'));
            rmSync(join(local, 'floor.bin'), { force: true });
          },
          async () => {
            const m = await cli(
              ['fetch', `personal:${folder}/big.bin`],
              `fetch-${r}`,
              false,
              'fetch',
            );
            times.fetch.push(m.ms);
            cliPeak.push(m.peakMiB);
          },
        ]);
      }
    }
    if (ONLY.has('many')) {
      await dav(s, 'MKCOL', `${folder}/Many`, [201]);
      const names = Array.from(
        { length: MANY },
        (_, i) => `${folder}/Many/f-${String(i).padStart(2, '0')}.txt`,
      );
      for (const name of names) await dav(s, 'PUT', name, [201], 'y'.repeat(1024));
      for (let r = 0; r < MANY_ROUNDS; r += 1) {
        let curls = 0;
        for (const name of names)
          curls += await curlGet(s, fileUrl(s, name), join(local, 'one.txt'));
        times.curls.push(curls);
        if (EACH) {
          let each = 0;
          for (const [i, name] of names.entries())
            each += (await cli(['fetch', `personal:${name}`], `each-${r}-${i}`)).ms;
          times.fetchEach.push(each);
        }
        const many = await runCliMeasured(
          ['fetch', ...names.map((n) => `personal:${n}`)],
          env(`many-${r}`),
          compiled,
        );
        rmSync(join(tmp, `many-${r}`), { recursive: true, force: true });
        // A CLI that takes one target per command has no figure here (the row says so).
        times.fetchMany.push(many.code === 0 ? many.ms : Number.NaN);
      }
    }
    const brokerPeak = memoryOf(broker.child.pid ?? 0)?.peakMiB ?? Number.NaN;
    const mib = (ms: number): number => BIG_MB / (ms / 1000);
    const rate = (xs: number[]): number => mib(median(xs));
    const rows: BenchRow[] = [];
    /** A transfer rate beside its baseline's, met at `factor` × the baseline or more. */
    const rateRow = (
      metric: string,
      value: number[],
      baseline: string,
      against: number[],
      factor: number,
      target: string,
    ): BenchRow => ({
      metric,
      value: rate(value),
      unit: 'MiB/s',
      baseline: { name: baseline, value: rate(against) },
      target: `≥ ${factor}× ${target}`,
      met: rate(value) >= factor * rate(against),
    });
    /** A rate beside a baseline that does the same work the broker must (informational). */
    const infoRow = (
      metric: string,
      value: number[],
      baseline: string,
      against: number[],
      what = 'what the broker adds to the verified upload',
    ): BenchRow => ({
      metric,
      value: rate(value),
      unit: 'MiB/s',
      baseline: { name: baseline, value: rate(against) },
      target: `informational: ${what}`,
    });
    const push = `broker push replacing a ${BIG_MB} MiB file`;
    if (ONLY.has('new'))
      rows.push(
        // Nextcloud hashes in PHP, so a verified upload cannot beat an unverified PUT: the
        // target is the PUT that asks for the same hash; the plain one is beside it.
        rateRow(
          `broker push of a new ${BIG_MB} MiB file`,
          times.pushNew,
          `direct PUT asking X-Hash: ${VERIFY_HASH}, as every push does`,
          times.putVerified,
          0.9,
          `direct PUT asking X-Hash: ${VERIFY_HASH}`,
        ),
        infoRow(
          `broker push of a new ${BIG_MB} MiB file`,
          times.pushNew,
          'direct PUT',
          times.put,
          'the unverified upload (a PUT asking X-Hash is itself 0.64–0.90× of it here)',
        ),
      );
    if (ONLY.has('replace'))
      rows.push(
        rateRow(
          push,
          times.pushReplace,
          `direct chunked upload, ${chunk / 2 ** 20} MiB chunks, keep-alive`,
          times.chunked,
          0.9,
          'direct chunked',
        ),
        rateRow(push, times.pushReplace, 'direct PUT', times.put, 0.35, 'direct PUT'),
        infoRow(
          push,
          times.pushReplace,
          `direct chunked upload asking X-Hash: ${VERIFY_HASH} on the MOVE, as every push does`,
          times.chunkedVerified,
        ),
      );
    if (ONLY.has('fetch'))
      rows.push(
        rateRow(
          `broker fetch ${BIG_MB} MiB`,
          times.fetch,
          'careful GET (sha256 while writing, fsync)',
          times.get,
          0.95,
          'careful GET',
        ),
        {
          metric: 'floor: a relay that hashes, then the careful GET (no broker)',
          value: rate(times.floor),
          unit: 'MiB/s',
          baseline: {
            name: 'careful GET (sha256 while writing, fsync)',
            value: rate(times.get),
          },
          target: 'informational: the most any relay that hashes reaches here',
        },
        infoRow(
          `broker fetch ${BIG_MB} MiB`,
          times.fetch,
          'the floor above',
          times.floor,
          'what the broker adds to the floor',
        ),
      );
    if (ONLY.has('many'))
      rows.push(
        {
          metric: `one broker fetch of ${MANY} files of 1 KiB`,
          value: median(times.fetchMany),
          unit: 'ms',
          baseline: { name: `${MANY} curl GETs, one after another`, value: median(times.curls) },
          target: '≤ 2× the curls',
          met: median(times.fetchMany) <= 2 * median(times.curls),
        },
        ...(times.fetchEach.length === 0
          ? []
          : [
              {
                metric: `${MANY} broker fetch commands of 1 KiB, one after another`,
                value: median(times.fetchEach),
                unit: 'ms',
                baseline: {
                  name: `${MANY} curl GETs, one after another`,
                  value: median(times.curls),
                },
                target: 'informational: one command per file',
              },
            ]),
      );
    if (cliPeak.length > 0)
      rows.push(
        {
          metric: 'broker peak RSS (VmHWM, whole run)',
          value: brokerPeak,
          unit: 'MiB',
          baseline: { name: 'broker after start', value: brokerIdle },
          target: '< 150 MiB',
          met: brokerPeak < 150,
        },
        {
          metric: 'CLI peak RSS (maxRSS, worst big transfer)',
          value: Math.max(...cliPeak),
          unit: 'MiB',
          target: '< 150 MiB',
          met: Math.max(...cliPeak) < 150,
        },
      );
    const per = (xs: number[]) => xs.map((x) => round(mib(x), 0)).join(', ');
    const ms = (xs: number[]) => xs.map((x) => round(x, 0)).join(', ');
    return {
      title: TITLE,
      rows,
      notes: [
        `Nextcloud on ${new URL(s.url).host} (loopback; Apache + PHP on the same ${cpus().length} CPUs as the broker, the CLI and this process). ${BIG_MB} MiB file, medians of ${ROUNDS} interleaved rounds (each step after a \`sync\`, the order reversed every other round); every client is its own process and its time includes its start-up. MiB/s per round — PUT: ${per(times.put)}; PUT asking X-Hash: ${per(times.putVerified)}; push new: ${per(times.pushNew)}; chunked: ${per(times.chunked)}; chunked asking X-Hash on the MOVE: ${per(times.chunkedVerified)}; push replacing: ${per(times.pushReplace)}; careful GET: ${per(times.get)}; floor: ${per(times.floor)}; fetch: ${per(times.fetch)}.`,
        `The direct PUT and chunked clients (bench/lib/direct-transfer.mjs) neither hash nor fsync (the "asking X-Hash" ones make Nextcloud hash what it stores, as every broker upload does: its verification); the chunked one sends its chunks one after another on one keep-alive connection with the chunk size the broker uses (the server's announced largest chunk, else transfer.chunk_size). The careful GET hashes what it writes and fsyncs it, as any client that records a file's sha256 must.`,
        `CPU seconds per GiB moved (median; broker from /proc, CLI from its rusage; the measure other load disturbs least) — ${[
          ...cpu.brokerGiB.keys(),
        ]
          .map(
            (k) =>
              `${k}: broker ${round(median(cpu.brokerGiB.get(k) ?? []), 2)}, CLI ${round(median(cpu.cliGiB.get(k) ?? []), 2)}`,
          )
          .join('; ')}.`,
        `${MANY} files of 1 KiB, ${MANY_ROUNDS} interleaved rounds, ms per round — curls: ${ms(times.curls)}; one broker fetch naming all ${MANY}: ${ms(times.fetchMany)}${times.fetchEach.length === 0 ? '' : `; ${MANY} broker fetch commands: ${ms(times.fetchEach)}`}. Each file still gets its own ticket, wall decision and audit records.`,
        ...(warnings.size > 0
          ? [`Warnings in the push answers: ${[...warnings].join('; ')}.`]
          : []),
        `The broker ran ${compiled === undefined ? 'from source (tsx; the build failed)' : 'compiled, with the shipped node flags'}; load average at the end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')} on ${cpus().length} CPUs shared with other work.`,
      ],
    };
  } finally {
    await agent.close().catch(() => undefined);
    await floor?.stop();
    await broker.stop();
    await leaveServer(s, folder);
    rmSync(tmp, { recursive: true, force: true });
  }
};

export default bench;
