/**
 * Attacks on the end of a grant while its operation runs, through the real daemon:
 * - a download that started just before its grant expired ran on until the next sweep
 *   (5 s, 255 MB): now it is cut at the expiry instant, by the operation's own timer,
 *   and the audit says the grant expired;
 * - list, mkdir, move and trash never got the abort signal, so a revoke during a slow
 *   PROPFIND still answered the listing: now it answers refused.
 * Timers are fired by hand and the clock is moved: no test waits for time to pass.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../../support/daemon.js';
import { getBlob } from '../../support/blobs.js';
import { call } from '../../support/mcp.js';
import { ManualTimers } from '../../support/timers.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { until } from '../../support/until.js';

let broker: Broker;
let transfer: Client;
let agent: Client;
const timers = new ManualTimers();

// Nextcloud's slow answers below come well within the client's timeout: only the abort
// signal can stop the wait for them.
const SLOW_MS = 20_000;

beforeAll(async () => {
  // Capabilities cached as in production: the trash below waits on its own fresh checks.
  broker = await startBroker({
    timers,
    nextcloud: { timeoutMs: 60_000, capabilitiesTtlMs: 60_000 },
  });
  timers.clock = () => Date.now() + broker.clock.offset;
  transfer = await broker.transfer();
  agent = await broker.agent();
});
afterAll(async () => {
  await broker.close();
});

const lastOutcome = (tool: string) =>
  broker
    .auditLines()
    .filter((l) => l.tool === tool && l.event === 'outcome')
    .at(-1);

describe('attack: start a download just before the grant expires', () => {
  it('is cut at the expiry instant by its own timer (no sweep), audited as expired', async () => {
    const content = randomBytes(8 * 1024 * 1024);
    await broker.fake.writeFile('Exp/big.bin', content);
    const id = await broker.grant([{ path: 'Exp', mode: 'read' }]);
    const grant = broker.store.activeGrants().find((g) => g.requestId === id);
    if (grant === undefined) throw new Error('no grant');
    const ticket = await call(transfer, 'read', { instance: 'personal', path: 'Exp/big.bin' });
    let paused = false;
    let resume = (): void => undefined;
    const done = new Promise<{ received: number; complete: boolean }>((resolve) => {
      const req = request(new URL(ticket.blob_url as string, broker.url), {
        headers: { authorization: `Bearer ${TRANSFER_TOKEN}` },
      });
      req.on('response', (res) => {
        let received = 0;
        res.on('data', (c: Buffer) => {
          received += c.length;
          // A slow reader: backpressure holds the stream open.
          if (!paused && received > 256 * 1024) {
            paused = true;
            res.pause();
            resume = () => res.resume();
          }
        });
        const end = () => resolve({ received, complete: res.complete });
        res.on('end', end);
        res.on('error', end);
        res.on('aborted', end);
      });
      req.on('error', () => resolve({ received: -1, complete: false }));
      req.end();
    });
    await until('the download to be under way', () => paused);
    // The download's timer is set for the grant's expiry (within 100 ms of that instant).
    const armed = timers.pending().filter((t) => Math.abs(t.at - grant.expiresAt) <= 100);
    expect(armed).toHaveLength(1);
    // The instant comes: the timer fires, as Node would; no sweep runs.
    broker.clock.offset += grant.expiresAt - timers.clock();
    timers.fire(armed[0] as (typeof armed)[number]);
    resume();
    const result = await done;
    expect(result.complete).toBe(false);
    expect(result.received).toBeLessThan(content.length);
    await until('the outcome line', () => lastOutcome('blob_get')?.outcome === 'refused');
    expect(lastOutcome('blob_get')).toMatchObject({ code: 'grant_expired', cause: 'expired' });
    expect(String(lastOutcome('blob_get')?.reason)).toContain('expired');
    // The sweep never ran: the grant is still marked active, the timer alone cut it.
    expect(broker.store.grant(grant.id)?.state).toBe('active');
    expect(broker.server.inFlight.size).toBe(0);
    expect(timers.pending().filter((t) => t.at === armed[0]?.at)).toEqual([]);
  });
});

describe('attack: revoke while a slow request to Nextcloud is on its way', () => {
  it('list answers refused (the grant was revoked), not the listing', async () => {
    await broker.fake.writeFile('SlowList/secret-name.txt', 'x');
    const id = await broker.grant([{ path: 'SlowList', mode: 'read' }]);
    broker.fake.faults.slowMs = SLOW_MS;
    try {
      const seen = broker.fake.requests.length;
      const answer = call(agent, 'list', { instance: 'personal', path: 'SlowList' });
      await until('the PROPFIND', () =>
        broker.fake.requests.slice(seen).some((r) => r.method === 'PROPFIND'),
      );
      await broker.gateway.decide(`revoke ${id}`);
      const listed = await answer;
      expect(listed).toMatchObject({ status: 'refused', code: 'grant_revoked' });
      expect(JSON.stringify(listed)).not.toContain('secret-name');
      expect(String(listed.message)).toContain('revoked');
      expect(lastOutcome('list')).toMatchObject({ outcome: 'refused', cause: 'revoked' });
    } finally {
      broker.fake.faults.slowMs = 0;
    }
  });

  it('trash stops during its checks: refused, no DELETE sent, nothing trashed', async () => {
    await broker.fake.writeFile('SlowTrash/a.txt', 'x');
    await broker.fake.writeFile('SlowTrash/warm.txt', 'x');
    const id = await broker.grant([{ path: 'SlowTrash', mode: 'write' }]);
    // A first trash fills the capabilities cache; the next one's checks are the client's.
    expect(
      await call(agent, 'trash', { instance: 'personal', path: 'SlowTrash/warm.txt' }),
    ).toMatchObject({ status: 'ok' });
    broker.fake.faults.slowMs = SLOW_MS;
    try {
      const seen = broker.fake.requests.length;
      const answer = call(agent, 'trash', { instance: 'personal', path: 'SlowTrash/a.txt' });
      await until('the first check', () => broker.fake.requests.length > seen);
      await broker.gateway.decide(`revoke ${id}`);
      expect(await answer).toMatchObject({ status: 'refused', code: 'grant_revoked' });
      expect(broker.fake.requests.slice(seen).some((r) => r.method === 'DELETE')).toBe(false);
    } finally {
      broker.fake.faults.slowMs = 0;
    }
    expect(await broker.fake.exists('SlowTrash/a.txt')).toBe(true);
  });

  it('a blob GET whose GET is on its way answers refused, not the bytes', async () => {
    await broker.fake.writeFile('SlowRead/a.txt', 'secret bytes');
    const id = await broker.grant([{ path: 'SlowRead', mode: 'read' }]);
    const ticket = await call(transfer, 'read', { instance: 'personal', path: 'SlowRead/a.txt' });
    broker.fake.faults.slowMs = SLOW_MS;
    try {
      const seen = broker.fake.requests.length;
      const answer = getBlob(broker.url, String(ticket.blob_url), TRANSFER_TOKEN);
      await until('the GET', () =>
        broker.fake.requests.slice(seen).some((r) => r.method === 'GET'),
      );
      await broker.gateway.decide(`revoke ${id}`);
      const got = await answer;
      expect(got.status).toBe(403);
      expect(JSON.parse(got.body.toString())).toMatchObject({
        status: 'refused',
        code: 'grant_revoked',
      });
      expect(got.body.toString()).not.toContain('secret bytes');
    } finally {
      broker.fake.faults.slowMs = 0;
    }
  });
});
