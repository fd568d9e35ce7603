/**
 * `list` through the broker vs a direct PROPFIND, with 1 and with 32 concurrent agents.
 *
 * Setup (all loopback, in the same run): the fake Nextcloud and `broker serve` each run
 * as their own node process; this process plays the agents. Each agent holds one
 * persistent MCP client (as a real agent does) and calls `list` on a granted folder of
 * 50 entries; the broker checks the wall, appends and fsyncs an intent line, sends a
 * PROPFIND Depth 1, parses it, appends the outcome and answers. The baseline sends the
 * same PROPFIND (same body, Basic auth, keep-alive) straight to the same fake folder.
 * Both are warmed up, then measured in interleaved rounds so drift hits both alike.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Bench, BenchRow } from './harness.js';
import { compiledCli } from './lib/build.js';
import { appendFsyncP50, listFloorRow, listTargetRow } from './lib/fsync.js';
import { callTool, connectMcp, grantViaConsole } from '../support/mcp.js';
import { cpuSecondsOf, memoryOf } from './lib/processes.js';
import {
  BROKER_CATEGORIES,
  describeSummary,
  summariseProfile,
  type ProfileSummary,
} from './lib/profile.js';
import { shippedNodeFlags } from '../support/node-flags.js';
import { closedLoop, latency, median, round } from './lib/stats.js';
import { davClient } from './lib/webdav.js';
import { AGENT_TOKEN, APP_PASSWORD } from '../support/tokens.js';
import { ROOT, spawnBroker, spawnFakeNextcloud, writeBrokerConfig } from '../support/processes.js';

/** The node flags the daemon ships with (npm start, Dockerfile, runbook). */
const SHIPPED_FLAGS = shippedNodeFlags(ROOT);
const FOLDER = 'Bench/Listing';
const ENTRIES = 50;
const WARMUP = Number(process.env.BENCH_LIST_WARMUP ?? 300);
const CALLS_1 = Number(process.env.BENCH_LIST_CALLS ?? 1500);
const CALLS_32 = Number(process.env.BENCH_LIST_CALLS_32 ?? 4000);
const AGENTS = 32;
const ROUNDS = 3;
const PROFILED_CALLS = Number(process.env.BENCH_LIST_PROFILED ?? 2000);

/** What limits the figures, naming the code an owner would change (from the profile). */
function limits(p: ProfileSummary): string {
  const ms = (label: RegExp): number =>
    p.inclusive.find((x) => label.test(x.label))?.ms ??
    p.perCategory.find((x) => label.test(x.label))?.ms ??
    0;
  const items: [number, string][] = [
    [
      ms(/^parseMultistatus/),
      'broker/nextcloud/multistatus.ts parseMultistatus (one strict pass of broker/nextcloud/xml.ts, then the entries)',
    ],
    [
      ms(/^MCP per-POST/),
      'broker/surfaces/mcp-endpoint.ts: the per-POST SDK Server (built, connected, dispatching)',
    ],
    [
      ms(/^audit log/),
      'broker/audit (the intent is a write + fsync on the critical path, the outcome a write; checkpoint rewrites)',
    ],
    [ms(/^express/), 'express routing and body parsing (broker/app.ts, surfaces/http)'],
  ];
  const named = items
    .filter(([v]) => v >= 0.05)
    .sort((a, b) => b[0] - a[0])
    .map(([v, text]) => `${text}: ${v.toFixed(2)} ms`)
    .join('; ');
  return `What limits it: the broker is one thread and spends ${p.busyMs.toFixed(1)} ms of CPU per call, on 2 CPUs that also run the agents and the fake; at 32 agents it is saturated (throughput ≈ 1000 ÷ its ms per call) while the direct path only pays the fake. Largest owner-side items per call: ${named}. At 1 agent the overhead also holds the MCP round trip itself (list_instances above) and the fsync the pipeline (docs/architecture.md) puts before the PROPFIND (the outcome before the answer is written, and fsynced with the next batch).`;
}

/** Where the broker's CPU goes per `list` call: a separate, profiled pass (1 agent). */
async function profilePass(
  tmp: string,
  config: string,
  compiled: string | undefined,
): Promise<{ text: string; summary: ProfileSummary }> {
  const dir = join(tmp, 'profile');
  const broker = await spawnBroker(config, {
    nodeArgs: [...SHIPPED_FLAGS, '--cpu-prof', '--cpu-prof-dir', dir],
    ...(compiled === undefined ? {} : { compiledMain: compiled }),
  });
  const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  try {
    for (let i = 0; i < PROFILED_CALLS; i += 1)
      await callTool(agent, 'list', { instance: 'personal', path: FOLDER });
    await agent.close();
    await broker.stop();
    const summary = summariseProfile(dir, PROFILED_CALLS, BROKER_CATEGORIES, [
      ['parseMultistatus (strict XML reader + entries)', /^parseMultistatus /],
      [
        'MCP per-POST set-up (new Server, connect, dispatch; surfaces/mcp-endpoint.ts handle)',
        /^handle .*surfaces\/mcp-endpoint/,
      ],
      ['GrantStore.activeGrants', /^activeGrants .*grants\/store/],
      ['audit checkpoint writes', /^writeCheckpoint /],
    ]);
    return {
      text: `Profile of ${PROFILED_CALLS} list calls (1 agent; broker start-up included): ${describeSummary(summary)}`,
      summary,
    };
  } finally {
    await broker.stop();
  }
}

function seed(root: string): void {
  const dir = join(root, FOLDER);
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < ENTRIES - 5; i += 1)
    writeFileSync(
      join(dir, `report-${String(i).padStart(2, '0')}.odt`),
      `file ${i}\n`.repeat(i + 1),
    );
  for (let i = 0; i < 5; i += 1) mkdirSync(join(dir, `Folder ${i}`));
}

const bench: Bench = async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'broker-list-bench-'));
  const root = join(tmp, 'nextcloud');
  mkdirSync(root);
  seed(root);
  const compiled = compiledCli();
  const fake = await spawnFakeNextcloud({ root });
  const config = writeBrokerConfig(tmp, { instances: { personal: fake.url } });
  const broker = await spawnBroker(config, {
    nodeArgs: SHIPPED_FLAGS,
    ...(compiled === undefined ? {} : { compiledMain: compiled }),
  });
  const dav = davClient(fake.url, 'alice', APP_PASSWORD, AGENTS);
  const agents: Client[] = [];
  try {
    for (let i = 0; i < AGENTS; i += 1)
      agents.push(await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN));
    const first = agents[0] as Client;
    await grantViaConsole(first, broker.type, 'personal', [{ path: 'Bench', mode: 'read' }]);

    const viaBroker = async (w: number): Promise<void> => {
      const answer = await callTool(agents[w] as Client, 'list', {
        instance: 'personal',
        path: FOLDER,
      });
      if (answer.status !== 'ok' || (answer.entries as unknown[]).length !== ENTRIES)
        throw new Error(`list failed: ${JSON.stringify(answer).slice(0, 300)}`);
    };
    const direct = async (): Promise<void> => {
      await dav.propfind(FOLDER);
    };

    // Warm-up: JIT, keep-alive sockets, SQLite and page caches on both paths.
    await closedLoop(AGENTS, WARMUP * 2, viaBroker);
    await closedLoop(AGENTS, WARMUP * 2, direct);
    await closedLoop(1, WARMUP, viaBroker);
    await closedLoop(1, WARMUP, direct);

    const one = { broker: [] as number[], direct: [] as number[], brokerCpu: 0, fakeCpu: 0 };
    const many = {
      broker: [] as number[],
      direct: [] as number[],
      brokerRate: [] as number[],
      directRate: [] as number[],
    };
    for (let r = 0; r < ROUNDS; r += 1) {
      const f0 = cpuSecondsOf(fake.pid);
      one.direct.push(...(await closedLoop(1, CALLS_1 / ROUNDS, direct)).samples);
      const b0 = cpuSecondsOf(broker.pid);
      one.fakeCpu += cpuSecondsOf(fake.pid) - f0;
      one.broker.push(...(await closedLoop(1, CALLS_1 / ROUNDS, viaBroker)).samples);
      one.brokerCpu += cpuSecondsOf(broker.pid) - b0;
      const d = await closedLoop(AGENTS, CALLS_32 / ROUNDS, direct);
      const b = await closedLoop(AGENTS, CALLS_32 / ROUNDS, viaBroker);
      many.direct.push(...d.samples);
      many.broker.push(...b.samples);
      many.directRate.push(d.perSecond);
      many.brokerRate.push(b.perSecond);
    }
    // A decomposition: an MCP round trip that touches neither Nextcloud nor the audit log.
    const mcpOnly = latency(
      (
        await closedLoop(1, 500, async () => {
          await callTool(first, 'list_instances', {});
        })
      ).samples,
    );
    const fsyncP50 = await appendFsyncP50(tmp);
    const mem = memoryOf(broker.pid);
    for (const a of agents) await a.close().catch(() => undefined);
    agents.length = 0;
    await broker.stop();
    // The grant persists in the data folder: the profiled broker serves the same folder.
    const profile = await profilePass(tmp, config, compiled);
    const b1 = latency(one.broker);
    const d1 = latency(one.direct);
    const b32 = latency(many.broker);
    const d32 = latency(many.direct);
    const brokerRate = median(many.brokerRate);
    const directRate = median(many.directRate);
    const overhead = b1.p50 - d1.p50;
    const rows: BenchRow[] = [
      {
        metric: 'list p50, 1 agent',
        value: b1.p50,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND', value: d1.p50 },
      },
      listTargetRow('list p50 overhead (broker − direct), 1 agent', b1.p50, d1.p50, fsyncP50),
      listFloorRow(
        'floor of that overhead: bare MCP round trip + 1 durable append, 1 agent',
        mcpOnly.p50,
        fsyncP50,
        overhead,
      ),
      {
        metric: 'broker CPU per list call, 1 agent (user + system, /proc)',
        value: (one.brokerCpu * 1000) / CALLS_1,
        unit: 'ms',
        baseline: {
          name: 'fake Nextcloud CPU per direct PROPFIND',
          value: (one.fakeCpu * 1000) / CALLS_1,
        },
        target: 'informational: on a busy machine each ms of it waits for a CPU as well',
      },
      {
        metric: 'list p99, 1 agent',
        value: b1.p99,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND', value: d1.p99 },
      },
      {
        metric: `list p50, ${AGENTS} agents`,
        value: b32.p50,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND', value: d32.p50 },
      },
      {
        metric: `list p99, ${AGENTS} agents`,
        value: b32.p99,
        unit: 'ms',
        baseline: { name: 'direct PROPFIND', value: d32.p99 },
      },
      {
        metric: `list throughput, ${AGENTS} agents`,
        value: brokerRate,
        unit: 'calls/s',
        baseline: { name: 'direct PROPFIND', value: directRate },
        target: '≥ 0.5× direct',
        met: brokerRate >= 0.5 * directRate,
      },
    ];
    return {
      title: `list through the broker (MCP over HTTP) vs direct PROPFIND Depth 1, ${ENTRIES} entries`,
      rows,
      notes: [
        `${CALLS_1} calls at 1 agent and ${CALLS_32} at ${AGENTS} agents per path, in ${ROUNDS} interleaved rounds after ${WARMUP} (1 agent) and ${WARMUP * 2} (${AGENTS} agents) warm-up calls; each agent keeps one MCP client (Streamable HTTP, stateless broker).`,
        `Throughput per round, broker: ${many.brokerRate.map((x) => round(x, 0)).join(', ')}; direct: ${many.directRate.map((x) => round(x, 0)).join(', ')} calls/s.`,
        `Three processes share the machine's CPUs: the agents (this process, ${AGENTS} MCP SDK clients), the broker and the fake Nextcloud; the direct baseline has no broker process competing. Broker RSS after the run: ${mem ? round(mem.rssMiB, 0) : '?'} MiB (peak ${mem ? round(mem.peakMiB, 0) : '?'} MiB).`,
        'Every broker call pays one durable audit append before the PROPFIND (its intent: an fsync unless shared with concurrent calls, group commit); its outcome is written before the answer and fsynced with the next batch (docs/architecture.md).',
        `The floor row: an MCP round trip through the same HTTP stack that touches neither Nextcloud nor the audit log (list_instances, 1 agent, the same broker) takes p50 ${mcpOnly.p50.toFixed(2)} ms, p99 ${mcpOnly.p99.toFixed(2)} ms; one write + fsync of an audit-sized line in the same temp folder takes p50 ${fsyncP50.toFixed(2)} ms, and a call at 1 agent pays one (its intent) that no other call shares.`,
        `Why the 1-agent overhead sits above its floor: the floor row holds what a call must wait for (the MCP hop and one fsync) but little CPU; a list call also spends the broker CPU of the row above (the profile below says on what), serially on the critical path, and at a load average of ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs every process hop (agent → broker → fake → broker → agent, against agent → fake → agent directly) can wait for a CPU as well. Neither is a fixed cost of the design: the target needs a quieter machine than this one and less CPU per call.`,
        profile.text,
        limits(profile.summary),
        `The broker ran ${compiled === undefined ? 'from source (tsx; the build failed)' : `compiled, with the shipped node flags (${SHIPPED_FLAGS.join(' ')})`}; load average at the end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')} on ${cpus().length} CPUs shared with other work.`,
      ],
    };
  } finally {
    for (const a of agents) await a.close().catch(() => undefined);
    dav.close();
    await broker.stop();
    await fake.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
};

export default bench;
