/**
 * Issue 24, item 4: the agent could fill the broker's disk through refused calls (about
 * 300 a second wrote 1 MB/s of audit lines); at disk full the broker failed closed and
 * stayed down until restarted. Here, through a real MCP client over HTTP against the
 * daemon: refused calls are rate-limited per surface (`rate_limited`, `retry_after`),
 * repeats are counted summaries (nothing unrecorded), and after the disk fills up and
 * space returns the broker resumes without a restart, its audit chain verifying.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { PROBE_DELAY_MS } from '../../broker/audit/resume.js';
import { SUMMARY_WINDOW_MS } from '../../broker/operations/refusal-ledger.js';
import { getBlob } from '../../support/blobs.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call, type Envelope } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

const i = 'personal';
let rig: Broker | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const auditBytes = (r: Broker): number => statSync(join(r.dir, 'audit.log')).size;

/** What the audit lines account for, of refused calls of `tool`: lines and counts. */
function accounted(r: Broker, tool: string): number {
  return r
    .auditLines()
    .filter((l) => l.tool === tool)
    .reduce(
      (n, l) =>
        n + (l.event === 'refused' ? 1 : l.event === 'refused_summary' ? Number(l.count) : 0),
      0,
    );
}

/** `n` calls of `tool` from `client`, `width` at a time. */
async function flood(
  client: Client,
  tool: string,
  args: (k: number) => Record<string, unknown>,
  n: number,
  width = 10,
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (let k = 0; k < n; k += width) {
    const batch = Array.from({ length: Math.min(width, n - k) }, (_, j) =>
      call(client, tool, args(k + j)),
    );
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

describe('attack: a flood of refused calls fills the disk', () => {
  it('300 refused calls with varying paths: past the budget they are rate_limited, all recorded in little disk', async () => {
    const r = (rig = await startBroker());
    const agent = await r.agent();
    const before = auditBytes(r);
    const started = Date.now();
    const answers = await flood(agent, 'list', (k) => ({ instance: i, path: `Secret/${k}` }), 300);
    // The default budget: 60 at once, one more each second (the flood takes a few).
    const earned = Math.ceil((Date.now() - started) / 1000);

    const refusedAnswers = answers.filter((a) => a.status === 'refused');
    const limited = answers.filter((a) => a.code === 'rate_limited');
    expect(refusedAnswers.length).toBeGreaterThanOrEqual(60);
    expect(refusedAnswers.length).toBeLessThanOrEqual(60 + earned);
    for (const a of refusedAnswers) expect(a.code).toBe('no_grant');
    expect(limited.length + refusedAnswers.length).toBe(300);
    for (const a of limited) {
      expect(a).toMatchObject({ status: 'error', code: 'rate_limited', retry: true });
      expect(a.retry_after).toBeGreaterThanOrEqual(1);
      expect(a.message).toContain(`call again in ${String(a.retry_after)} s`);
    }
    // A line per refusal answered as such and one for the first limited call, of 300
    // calls; before, 300 lines.
    const lines = r.auditLines().filter((l) => l.tool === 'list');
    expect(lines).toHaveLength(refusedAnswers.length + 1);
    expect(auditBytes(r) - before).toBeLessThan(lines.length * 600);

    // Nothing unrecorded: once the window closes, the sweep writes the count.
    r.clock.offset += SUMMARY_WINDOW_MS;
    await r.server.sweep();
    expect(r.auditLines().at(-1)).toMatchObject({
      event: 'refused_summary',
      surface: 'agent',
      tool: 'list',
      code: 'rate_limited',
      refused_code: 'no_grant',
      count: limited.length - 1,
    });
    expect(accounted(r, 'list')).toBe(300);
    expect(verifyAudit(r.dir)).toMatchObject({ ok: true });
  });

  it('the same refusal repeated is one line and one counted summary', async () => {
    const r = (rig = await startBroker());
    const agent = await r.agent();
    const answers = await flood(agent, 'trash', () => ({ instance: i, path: 'Secret/x' }), 50);
    for (const a of answers) expect(a).toMatchObject({ status: 'refused', code: 'no_grant' });
    expect(r.auditLines().filter((l) => l.tool === 'trash')).toHaveLength(1);
    r.clock.offset += SUMMARY_WINDOW_MS;
    await r.server.sweep();
    const summary = r.auditLines().at(-1);
    expect(summary).toMatchObject({
      event: 'refused_summary',
      tool: 'trash',
      path: 'Secret/x',
      code: 'no_grant',
      count: 49,
    });
    expect(Date.parse(String(summary?.first))).toBeLessThanOrEqual(
      Date.parse(String(summary?.last)),
    );
  });

  it('each surface has its own budget, and allowed calls are never limited', async () => {
    // A budget that earns nothing back within the test, so the limit holds throughout.
    const r = (rig = await startBroker({ refusalBudget: { burst: 60, perSecond: 0.001 } }));
    await r.fake.mkdir('Docs');
    await r.grant([{ path: 'Docs', mode: 'read' }]);
    const agent = await r.agent();
    const transfer = await r.transfer();
    await flood(agent, 'list', (k) => ({ instance: i, path: `Secret/${k}` }), 70);
    expect(await call(agent, 'list', { instance: i, path: 'Secret/more' })).toMatchObject({
      code: 'rate_limited',
    });
    // The agent's own allowed call runs; the transfer surface still answers as itself.
    expect(await call(agent, 'list', { instance: i, path: 'Docs' })).toMatchObject({
      status: 'ok',
    });
    expect(await call(transfer, 'read', { instance: i, path: 'Secret/a' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
    // Invalid arguments count as refusals too.
    expect(await call(agent, 'list', { instance: 7 })).toMatchObject({ code: 'rate_limited' });
  });

  it('the blob endpoint answers 429 with Retry-After once the transfer surface is spent', async () => {
    const r = (rig = await startBroker({ refusalBudget: { burst: 3, perSecond: 0.1 } }));
    const bogus = `${r.url}/transfer/blobs/${'A'.repeat(43)}`;
    const statuses: number[] = [];
    for (let k = 0; k < 4; k += 1)
      statuses.push((await getBlob(r.url, bogus, TRANSFER_TOKEN)).status);
    expect(statuses).toEqual([404, 404, 404, 429]);
    const limited = await getBlob(r.url, bogus, TRANSFER_TOKEN);
    expect(limited.headers['retry-after']).toBe('10');
    expect(JSON.parse(limited.body.toString())).toMatchObject({
      code: 'rate_limited',
      retry_after: 10,
    });
  });

  it('counts still open at a stop are written before the stop record', async () => {
    const first = await startBroker({ persist: true });
    rig = first;
    const agent = await first.agent();
    await flood(agent, 'mkdir', () => ({ instance: i, path: 'Secret/new' }), 20);
    const r = (rig = await first.restart());
    const lines = r.auditLines();
    const stop = lines.findIndex((l) => l.event === 'stop');
    const summary = lines.findIndex((l) => l.event === 'refused_summary' && l.tool === 'mkdir');
    expect(summary).toBeGreaterThan(-1);
    expect(summary).toBeLessThan(stop);
    expect(lines[summary]).toMatchObject({ count: 19 });
    expect(accounted(r, 'mkdir')).toBe(20);
  });
});

describe('attack: the disk fills up under a flood, then space returns', () => {
  it('refuses every operation while full, counts the refusals, and resumes without a restart', async () => {
    const r = (rig = await startBroker());
    await r.fake.mkdir('Docs');
    await r.grant([{ path: 'Docs', mode: 'read' }]);
    const agent = await r.agent();
    expect(await call(agent, 'list', { instance: i, path: 'Docs' })).toMatchObject({
      status: 'ok',
    });

    r.failAudit(true);
    const sent = r.fake.requests.length;
    const whileFull = await flood(agent, 'list', () => ({ instance: i, path: 'Secret/x' }), 20);
    for (const a of whileFull) expect(a).toMatchObject({ status: 'refused', code: 'no_grant' });
    expect(await call(agent, 'list', { instance: i, path: 'Docs' })).toMatchObject({
      status: 'refused',
      code: 'audit_unavailable',
    });
    r.clock.offset += PROBE_DELAY_MS;
    expect(await call(agent, 'list', { instance: i, path: 'Docs' })).toMatchObject({
      code: 'audit_unavailable',
    });
    expect(r.fake.requests.length).toBe(sent);

    // Space returns: the next try (its delay doubled) resumes; no restart.
    r.failAudit(false);
    r.clock.offset += 2 * PROBE_DELAY_MS;
    expect(await call(agent, 'list', { instance: i, path: 'Docs' })).toMatchObject({
      status: 'ok',
    });
    r.clock.offset += SUMMARY_WINDOW_MS;
    await r.server.sweep();

    const lines = r.auditLines();
    const recovery = lines.find((l) => l.event === 'recovery');
    expect(recovery).toMatchObject({ outage: { cause: 'ENOSPC' } });
    expect((recovery?.outage as { refused_appends: number }).refused_appends).toBeGreaterThan(0);
    // The 20 refusals made while the disk was full are all counted in a summary.
    expect(accounted(r, 'list')).toBe(20);
    expect(verifyAudit(r.dir)).toMatchObject({ ok: true });
  });
});
