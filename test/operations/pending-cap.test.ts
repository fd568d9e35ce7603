/**
 * The owner can be flooded: 100 request_access calls in under two seconds made 100
 * pending requests. With lifecycle.max_pending (all instances together) the next one is
 * refused, saying to wait for the owner, until the owner has decided some.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SUMMARY_WINDOW_MS } from '../../broker/operations/refusal-ledger.js';
import { H, startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  // The flood here is of the owner, not of the audit log: a refusal budget that never
  // runs out, so every refusal is the cap's own (flood.test.ts covers the budget).
  broker = await startBroker({ maxPending: 10, refusalBudget: { burst: 10_000, perSecond: 1 } });
  agent = await broker.agent();
});
afterAll(async () => {
  await broker.close();
});

const ask = (n: number, instance = 'personal') =>
  call(agent, 'request_access', {
    instance,
    reason: `flood ${n}`,
    items: [{ path: `Flood/${n}`, mode: 'read' }],
  });

async function denyAllPending(): Promise<void> {
  for (const r of broker.store.pendingRequests()) await broker.gateway.decide(`deny ${r.id}`);
}

describe('the owner can be flooded', () => {
  it('100 requests at once: 10 wait for the owner, 90 are refused with "wait for the owner"', async () => {
    const posted = broker.gateway.posted.length;
    const answers = await Promise.all(Array.from({ length: 100 }, (_, n) => ask(n)));
    const waiting = answers.filter((a) => a.status === 'pending');
    const refused = answers.filter((a) => a.status === 'refused');
    expect(waiting).toHaveLength(10);
    expect(refused).toHaveLength(90);
    expect(broker.store.pendingRequests()).toHaveLength(10);
    expect(broker.gateway.posted.length - posted).toBe(10);
    const ids = waiting.map((a) => a.request as number).sort((a, b) => a - b);
    for (const a of refused) {
      expect(a.code).toBe('too_many_pending');
      expect(a.message).toContain('wait for the owner');
      expect(a.hint).toContain('check_access');
      expect(a.pending_requests).toEqual(ids);
    }
    // The 90 identical refusals are one `refused` line and one counted summary of the
    // other 89, written once their window closed (refusal-ledger.ts).
    broker.clock.offset += SUMMARY_WINDOW_MS;
    await broker.server.sweep();
    const lines = broker.auditLines().filter((l) => l.code === 'too_many_pending');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ event: 'refused', tool: 'request_access', pending: ids });
    expect(lines[1]).toMatchObject({
      event: 'refused_summary',
      tool: 'request_access',
      pending: ids,
      count: 89,
    });
    // check_access without arguments lists what waits, so the agent can follow it.
    const status = await call(agent, 'check_access', {});
    expect((status.pending_requests as { request: number }[]).map((r) => r.request)).toEqual(ids);
    expect(status.message).toContain('10 requests waiting for the owner');
    await denyAllPending();
  });

  it('counts every instance together, and makes room as soon as the owner decides', async () => {
    for (let n = 0; n < 5; n += 1) expect((await ask(n, 'personal')).status).toBe('pending');
    for (let n = 0; n < 5; n += 1) expect((await ask(n, 'shared')).status).toBe('pending');
    expect(await ask(99, 'shared')).toMatchObject({ status: 'refused', code: 'too_many_pending' });
    const first = broker.store.pendingRequests()[0]?.id as number;
    await broker.gateway.decide(`deny ${first}`);
    expect((await ask(100, 'personal')).status).toBe('pending');
    expect(await ask(101, 'personal')).toMatchObject({ code: 'too_many_pending' });
    await denyAllPending();
  });

  it('a request past its pending timeout no longer counts (it can no longer be approved)', async () => {
    for (let n = 0; n < 10; n += 1) expect((await ask(n)).status).toBe('pending');
    expect(await ask(10)).toMatchObject({ code: 'too_many_pending' });
    broker.clock.offset += 12 * H;
    try {
      expect((await ask(11)).status).toBe('pending');
    } finally {
      broker.clock.offset -= 12 * H;
    }
    await denyAllPending();
  });
});
