/**
 * The broker against a real Nextcloud, each figure against direct WebDAV to the same
 * server in the same run: `list` (MCP, 1 agent) vs PROPFIND Depth 1; a 1 KiB `broker
 * fetch` (the whole CLI process) vs `curl` GET into a file. The big transfers and many
 * small files are real-transfer.bench.ts.
 *
 * It runs when a real server is described by the environment as for the real-server test
 * suite (NC_URL, NC_USER, NC_APP_PASSWORD; CONTRIBUTING.md, "The real-server suite"),
 * and works in a folder of its own that it deletes at the end (into the trash bin; with
 * NC_RESET set, it empties the server before and after instead). It measures whatever
 * the CLI and the broker do.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bench, BenchRow } from './harness.js';
import { brokerOnRealServer } from './lib/real-broker.js';
import { runCliMeasured } from './lib/cli.js';
import { cpuSecondsOf } from './lib/processes.js';
import { curlGet, dav, fileUrl as urlOf, leaveServer, serverFromEnv } from './lib/real-server.js';
import { appendFsyncP50, listFloorRow, listTargetRow } from './lib/fsync.js';
import { closedLoop, latency, median, round } from './lib/stats.js';
import { davClient } from './lib/webdav.js';
import { callTool, connectMcp, grantViaConsole } from '../support/mcp.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../support/tokens.js';

const LIST_CALLS = Number(process.env.BENCH_REAL_LIST_CALLS ?? 150);
const ROUNDS = Number(process.env.BENCH_REAL_ROUNDS ?? 3);
const SMALL_ROUNDS = 7;
const ENTRIES = 50;

const skipped = (why: string) => ({
  title: 'Against a real Nextcloud: broker vs direct WebDAV to the same server',
  rows: [],
  notes: [`Not run: ${why}.`],
});

/** Where the list target's allowance goes: the note under the table. */
function listBudget(allowance: number, floor: number, agentExtra: number, brokerCpu: number) {
  const ms = (x: number): string => `${x.toFixed(1)} ms`;
  return `Where the list overhead goes: the 1.1× target allows ${ms(allowance)} over the PROPFIND. The floor row (a bare MCP round trip and one fsync) takes ${ms(floor)} of it, and the agent's MCP client (the SDK over fetch) spends ${ms(agentExtra)} more CPU per call than a plain HTTP client, part of it in the round trip and part in reading a 50-entry answer. The broker's own work comes on top: ${ms(brokerCpu)} of CPU per call on all its threads, of which its main thread's part (the wall, the intent and outcome lines, relaying the PROPFIND, parsing the multistatus, checking and writing the answer) runs serially with the PROPFIND.`;
}

const bench: Bench = async () => {
  const s = serverFromEnv();
  if (s === undefined)
    return skipped(
      'no real server is set up (NC_URL, NC_USER, NC_APP_PASSWORD, as for the real-server test suite)',
    );
  const folder = `Bench-${process.pid}-${Date.now()}`;
  const listed = `${folder}/Listing`;
  const tmp = mkdtempSync(join(tmpdir(), 'broker-real-bench-'));
  const local = join(tmp, 'local');
  mkdirSync(local);
  const fileUrl = (path: string): string => urlOf(s, path);
  const { broker, compiled } = await brokerOnRealServer(s, tmp);
  const direct = davClient(s.url, s.user, s.password, 4);
  const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  try {
    // The same shape as the fake's listing bench: 45 small files and 5 folders.
    await dav(s, 'MKCOL', folder, [201]);
    await dav(s, 'MKCOL', listed, [201]);
    for (let i = 0; i < ENTRIES - 5; i += 1)
      await dav(
        s,
        'PUT',
        `${listed}/report-${String(i).padStart(2, '0')}.odt`,
        [201],
        `file ${i}\n`.repeat(i + 1),
      );
    for (let i = 0; i < 5; i += 1) await dav(s, 'MKCOL', `${listed}/Folder ${i}`, [201]);
    await dav(s, 'PUT', `${folder}/small.bin`, [201], 'x'.repeat(1024));
    await grantViaConsole(agent, broker.type, 'personal', [{ path: folder, mode: 'write' }]);

    // list: 1 agent, interleaved rounds after a warm-up on both paths.
    const viaBroker = async (): Promise<void> => {
      const answer = await callTool(agent, 'list', { instance: 'personal', path: listed });
      if (answer.status !== 'ok' || (answer.entries as unknown[]).length !== ENTRIES)
        throw new Error(`list failed: ${JSON.stringify(answer).slice(0, 300)}`);
    };
    const viaDav = async (): Promise<void> => {
      await direct.propfind(listed);
    };
    await closedLoop(1, 20, viaBroker);
    await closedLoop(1, 20, viaDav);
    const list = { broker: [] as number[], direct: [] as number[] };
    // Where the overhead goes: the CPU of this process (the agent's MCP client, against a
    // plain HTTP client) and of the broker, per call.
    const cpu = { agentViaBroker: 0, agentDirect: 0, broker: 0 };
    const agentCpuMs = (since: NodeJS.CpuUsage): number => {
      const used = process.cpuUsage(since);
      return (used.user + used.system) / 1000;
    };
    for (let r = 0; r < ROUNDS; r += 1) {
      let since = process.cpuUsage();
      list.direct.push(...(await closedLoop(1, LIST_CALLS / ROUNDS, viaDav)).samples);
      cpu.agentDirect += agentCpuMs(since);
      since = process.cpuUsage();
      const brokerCpu = cpuSecondsOf(broker.pid);
      list.broker.push(...(await closedLoop(1, LIST_CALLS / ROUNDS, viaBroker)).samples);
      cpu.broker += (cpuSecondsOf(broker.pid) - brokerCpu) * 1000;
      cpu.agentViaBroker += agentCpuMs(since);
    }
    // The floor of the overhead: an MCP round trip through the same broker that touches
    // neither Nextcloud nor the audit log.
    const mcpOnly = latency(
      (
        await closedLoop(1, 100, async () => {
          await callTool(agent, 'list_instances', {});
        })
      ).samples,
    );

    const env = (stage: string) => ({
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
      BROKER_STAGE_DIR: join(tmp, stage),
    });
    const cli = async (args: string[], stage: string) => {
      const m = await runCliMeasured(args, env(stage), compiled);
      if (m.code !== 0) throw new Error(`broker ${args[0]} failed: ${m.stderr.slice(-500)}`);
      rmSync(join(tmp, stage), { recursive: true, force: true });
      return m.ms;
    };
    // 1 KiB: the whole CLI process vs curl into a file, interleaved.
    const small = { cli: [] as number[], curl: [] as number[] };
    for (let r = 0; r < SMALL_ROUNDS; r += 1) {
      small.curl.push(await curlGet(s, fileUrl(`${folder}/small.bin`), join(local, 'small.bin')));
      small.cli.push(await cli(['fetch', `personal:${folder}/small.bin`], `small-${r}`));
    }
    const b = latency(list.broker);
    const d = latency(list.direct);
    const fsyncP50 = await appendFsyncP50(tmp);
    const rows: BenchRow[] = [
      {
        metric: 'list p50, 1 agent',
        value: b.p50,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND Depth 1', value: d.p50 },
      },
      listTargetRow('list p50 overhead (broker − direct)', b.p50, d.p50, fsyncP50),
      listFloorRow(
        'floor of that overhead: bare MCP round trip + 1 durable append',
        mcpOnly.p50,
        fsyncP50,
        b.p50 - d.p50,
      ),
      {
        metric: "the agent's CPU per list call (this process: the SDK's MCP client)",
        value: cpu.agentViaBroker / LIST_CALLS,
        unit: 'ms',
        baseline: {
          name: 'per PROPFIND from a plain node:http client',
          value: cpu.agentDirect / LIST_CALLS,
        },
        target: 'informational: the client side of the overhead, not the broker',
      },
      {
        metric: 'broker CPU per list call (user + system, /proc)',
        value: cpu.broker / LIST_CALLS,
        unit: 'ms',
        target:
          'informational: all its threads (the main one, the file system’s writes and fsyncs, the garbage collector)',
      },
      {
        metric: 'list p99, 1 agent',
        value: b.p99,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND Depth 1', value: d.p99 },
      },
      {
        metric: 'fetch 1 KiB, whole CLI process',
        value: median(small.cli),
        unit: 'ms',
        baseline: { name: 'curl GET to a file', value: median(small.curl) },
        target: '≤ 2.5× curl',
        met: median(small.cli) <= 2.5 * median(small.curl),
      },
    ];
    return {
      title: `Against a real Nextcloud: broker vs direct WebDAV to the same server`,
      rows,
      notes: [
        `Nextcloud on ${new URL(s.url).host} (loopback; Apache + PHP on the same 2 CPUs as the broker, the CLI and this process). list: ${LIST_CALLS} calls per path in ${ROUNDS} interleaved rounds after 20 warm-up calls, a folder of ${ENTRIES} entries; the direct client sends the broker's PROPFIND body with keep-alive.`,
        listBudget(
          0.1 * d.p50,
          mcpOnly.p50 + fsyncP50,
          (cpu.agentViaBroker - cpu.agentDirect) / LIST_CALLS,
          cpu.broker / LIST_CALLS,
        ),
        `1 KiB fetch: ${SMALL_ROUNDS} interleaved rounds, medians; per run, CLI: ${small.cli.map((x) => round(x, 0)).join(', ')} ms; curl: ${small.curl.map((x) => round(x, 0)).join(', ')} ms. The CLI's time is the whole process: node start-up, the ticket call on the transfer surface, the GET through the broker, hashing, fsync and rename.`,
        `The broker ran ${compiled === undefined ? 'from source (tsx; the build failed)' : 'compiled, with the shipped node flags'}; load average at the end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')} on ${cpus().length} CPUs shared with other work.`,
      ],
    };
  } finally {
    await agent.close().catch(() => undefined);
    direct.close();
    await broker.stop();
    await leaveServer(s, folder);
    rmSync(tmp, { recursive: true, force: true });
  }
};

export default bench;
