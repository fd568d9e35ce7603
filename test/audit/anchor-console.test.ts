/**
 * The owner's whole anchor routine with `approval: console` (issue 14.8), every step a
 * real process: `broker serve` prints `audit anchor SEQ:HASH` after the owner's
 * `approve N`; `broker audit verify --anchor SEQ:HASH` passes on the log as written and
 * fails once the history up to SEQ is rewritten on the host, checkpoint included.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { rewriteHistory } from '../../support/audit-rewrite.js';
import { callTool, connectMcp, grantViaConsole } from '../../support/mcp.js';
import {
  runCli,
  spawnBroker,
  writeBrokerConfig,
  type BrokerChild,
} from '../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD } from '../../support/tokens.js';

let fake: FakeNextcloud;
let dir: string;
let broker: BrokerChild | undefined;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'broker-anchor-'));
});
afterAll(async () => {
  await broker?.stop(1_000);
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('console mode: the anchor is printed, and it catches a rewritten history', () => {
  it('approve → `audit anchor SEQ:HASH` on the console → verify --anchor passes, then fails after a rewrite', async () => {
    const config = writeBrokerConfig(dir, { instances: { personal: fake.url } });
    const dataDir = join(dir, 'data');
    broker = await spawnBroker(config);
    const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
    const id = await grantViaConsole(agent, broker.type, 'personal', [
      { path: 'Work', mode: 'read' },
    ]);
    const printed = await broker.waitConsole(/audit anchor ([1-9][0-9]*):([0-9a-f]{64})/);
    const anchor = `${printed[1]}:${printed[2]}`;
    await agent.close();
    expect(await broker.stop()).toBe(0);
    broker = undefined;

    const intact = await runCli(['audit', 'verify', '--data-dir', dataDir, '--anchor', anchor], {});
    expect(intact).toMatchObject({ code: 0, json: { status: 'ok', anchors: 1 } });

    // The attacker turns the approval into a denial and recomputes every hash after it.
    rewriteHistory(dataDir, (records) => {
      expect(records.some((r) => r.event === 'decision' && r.request === id)).toBe(true);
      return records.map((r) => (r.event === 'decision' ? { ...r, outcome: 'denied' } : r));
    });

    expect((await runCli(['audit', 'verify', '--data-dir', dataDir], {})).code).toBe(0);
    const caught = await runCli(['audit', 'verify', '--data-dir', dataDir, '--anchor', anchor], {});
    expect(caught.code).toBe(4);
    expect(caught.json).toMatchObject({ status: 'corrupt', anchor });
  });
});

describe('attack: a batch decision floods the room with anchors', () => {
  it('`deny all` over ten requests is followed by one anchor, of the head after the last denial', async () => {
    mkdirSync(join(dir, 'batch'));
    const config = writeBrokerConfig(join(dir, 'batch'), { instances: { personal: fake.url } });
    broker = await spawnBroker(config);
    const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
    for (let i = 0; i < 10; i += 1) {
      const answer = await callTool(agent, 'request_access', {
        instance: 'personal',
        reason: `flood ${i}`,
        items: [{ path: `F${i}`, mode: 'read' }],
      });
      expect(answer.status).toBe('pending');
    }
    await agent.close();
    const from = broker.stdout().length;
    broker.type('deny all');
    await broker.waitConsole(/Denied 10 pending requests/, from);
    await broker.waitConsole(/audit anchor \d+:[0-9a-f]{64}/, from);
    // Anything the command still had to post is out once the next command's answer is.
    broker.type('status');
    await broker.waitConsole(/No pending requests/, from);
    const anchors = [
      ...broker
        .stdout()
        .slice(from)
        .matchAll(/audit anchor (\d+):[0-9a-f]{64}/g),
    ];
    expect(anchors).toHaveLength(1);
    expect(await broker.stop()).toBe(0);
    broker = undefined;
    // The one anchor is a head that holds all ten denials.
    const seq = Number(anchors[0]![1]);
    const denials = readFileSync(join(dir, 'batch', 'data', 'audit.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { seq: number; event: string; outcome?: string })
      .filter((r) => r.event === 'decision' && r.outcome === 'denied');
    expect(denials).toHaveLength(10);
    expect(denials.every((r) => r.seq <= seq)).toBe(true);
  });
});
