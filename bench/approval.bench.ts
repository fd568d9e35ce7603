/**
 * Approval latency through the real Matrix path: the approver's 👍 on the bot's request
 * message is sent to the (fake) homeserver → the gateway's long-poll sync delivers it →
 * the engine decides (SQLite transaction + audit fsync) → the agent's next `list` on the
 * granted folder answers ok. Measured from sending the reaction to the first ok `list`
 * answer, with the agent calling `list` back to back while it waits (one persistent MCP
 * client, as a waiting agent would poll).
 *
 * Baseline, same run, same homeserver and gateway: a plain chat line from the approver
 * until the gateway has handled it (send → seen by the bot's sync, no decision).
 */
import { loadavg } from 'node:os';
import type { Bench } from './harness.js';
import { callTool } from '../support/mcp.js';
import { FAULT_RUN, OWNER, ROOM, startMatrixBroker } from '../support/daemon.js';
import { latency, round } from './lib/stats.js';

const SAMPLES = Number(process.env.BENCH_APPROVAL_SAMPLES ?? 30);
const TARGET_MS = 500;

const bench: Bench = async () => {
  const rig = await startMatrixBroker(FAULT_RUN);
  try {
    const agent = await rig.agent();
    const approval: number[] = [];
    const delivery: number[] = [];
    const polls: number[] = [];
    for (let i = 0; i < SAMPLES + 2; i += 1) {
      const folder = `Approval/${i}`;
      await rig.fake.mkdir(folder);
      const id = await rig.request(agent, [{ path: folder, mode: 'read' }]);
      const message = rig.requestMessage(id);
      if (message === undefined) throw new Error(`request ${id} was not posted`);
      const before = await callTool(agent, 'list', { instance: 'personal', path: folder });
      if (before.status !== 'refused') throw new Error(`listed before approval: ${before.status}`);

      const t0 = performance.now();
      rig.hs.reactAs(OWNER, ROOM, message, '👍');
      let n = 0;
      for (;;) {
        n += 1;
        const answer = await callTool(agent, 'list', { instance: 'personal', path: folder });
        if (answer.status === 'ok') break;
        if (performance.now() - t0 > 10_000)
          throw new Error(`request ${id}: not usable after 10 s`);
      }
      const usable = performance.now() - t0;

      // Let the bot's confirmation go out, then the baseline: one chat line.
      await new Promise((r) => setTimeout(r, 30));
      const t1 = performance.now();
      const chat = rig.hs.sayAs(OWNER, ROOM, `thanks ${i}`);
      await rig.handled(chat);
      const seen = performance.now() - t1;
      await new Promise((r) => setTimeout(r, 30));
      // The first two samples warm up the SDK, SQLite and the JIT.
      if (i >= 2) {
        approval.push(usable);
        delivery.push(seen);
        polls.push(n);
      }
    }
    const a = latency(approval);
    const d = latency(delivery);
    return {
      title: 'Approval latency: 👍 in Matrix → grant usable by the agent',
      rows: [
        {
          metric: '👍 sent → first ok list, p50',
          value: a.p50,
          unit: 'ms',
          baseline: { name: 'chat line send → handled by the bot', value: d.p50 },
          target: `< ${TARGET_MS} ms`,
          met: a.p50 < TARGET_MS,
        },
        {
          metric: '👍 sent → first ok list, p99',
          value: a.p99,
          unit: 'ms',
          baseline: { name: 'chat line send → handled by the bot', value: d.p99 },
          target: `< ${TARGET_MS} ms`,
          met: a.p99 < TARGET_MS,
        },
      ],
      notes: [
        `${SAMPLES} samples after 2 warm-up ones; the agent polled list ${Math.min(...polls)}–${Math.max(...polls)} times per sample (the figure includes up to one list round trip of polling granularity).`,
        'Fake homeserver on loopback (long-poll sync answers as soon as an event arrives); a real homeserver adds its own federation/fan-out delay to both figures alike.',
        `Samples (ms): ${approval.map((x) => round(x, 0)).join(', ')}. Load average ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')}.`,
      ],
    };
  } finally {
    await rig.close();
  }
};

export default bench;
