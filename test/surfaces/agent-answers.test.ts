/**
 * What the agent is told after its grants ended, through a real MCP client: check_access
 * says what holds now per item (active until, revoked at by the owner, expired at), the
 * file tools say `grant_revoked` / `grant_expired` with when instead of `no_grant`, and
 * `isError` is set exactly on refusals and errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { H, startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
});
afterAll(async () => {
  await broker.close();
});

const iso = (ms: number): string => new Date(ms).toISOString();

/** Runs `fn` with the broker's clock `ms` ahead, then puts it back. */
async function later<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  broker.clock.offset += ms;
  try {
    return await fn();
  } finally {
    broker.clock.offset -= ms;
  }
}

function grantOf(request: number, item = 1) {
  const g = broker.store.getRequest(request)?.items[item - 1]?.grant;
  if (g === undefined || g === null)
    throw new Error(`request ${request} item ${item} has no grant`);
  return g;
}

describe('check_access after a revoke says revoked, never "usable until their expiry"', () => {
  it('revoke all: the message and every item say revoked at T by the owner', async () => {
    await broker.fake.mkdir('Rev1');
    const id = await broker.grant([
      { path: 'Rev1', mode: 'read' },
      { path: 'Rev1/b', mode: 'write' },
    ]);
    const before = await call(agent, 'check_access', { request: id });
    expect(before.message).toContain(`2 items active until ${iso(grantOf(id).expiresAt)}`);
    expect((before.items as { holds: string }[])[0]?.holds).toContain('active until');

    await broker.gateway.decide('revoke all');
    const after = await call(agent, 'check_access', { request: id });
    const revokedAt = iso(grantOf(id).endedAt as number);
    expect(after.message).not.toContain('usable until');
    expect(after.message).toContain(`2 items revoked by the owner at ${revokedAt}`);
    expect(after.message).toContain('call request_access again');
    for (const item of after.items as Record<string, unknown>[]) {
      expect(item).toMatchObject({
        grant_state: 'revoked',
        ended_at: revokedAt,
        ended_by: 'owner',
      });
      expect(item.holds).toBe(`revoked at ${revokedAt} by the owner`);
    }
  });

  it('an expired grant says expired at its expiry, before and after the sweep', async () => {
    const id = await broker.grant([{ path: 'Exp1', mode: 'read' }]);
    const expiry = iso(grantOf(id).expiresAt);
    for (const sweep of [false, true]) {
      const after = await later(25 * H, async () => {
        if (sweep) await broker.server.sweep();
        return call(agent, 'check_access', { request: id });
      });
      expect(after.message).toContain(`1 item expired at ${expiry}`);
      expect(after.message).not.toContain('usable until');
      expect((after.items as Record<string, unknown>[])[0]).toMatchObject({
        grant_state: 'expired',
        ended_at: expiry,
        holds: `expired at ${expiry}`,
      });
    }
  });

  it('partially approved, one item revoked and one active: said per item and summed up truthfully', async () => {
    const id = await broker.request(agent, [
      { path: 'Part/a', mode: 'read' },
      { path: 'Part/b', mode: 'read' },
      { path: 'Part/c', mode: 'read' },
    ]);
    await broker.gateway.decide(`approve ${id} 1,2`);
    broker.clock.offset += 1000;
    broker.store.revokeGrants([grantOf(id, 1).id]);
    broker.clock.offset -= 1000;
    const answer = await call(agent, 'check_access', { request: id });
    const items = answer.items as Record<string, unknown>[];
    expect(answer.message).toContain('partially approved (2 of 3 items)');
    expect(answer.message).toContain(`1 item active until ${iso(grantOf(id, 2).expiresAt)}`);
    expect(answer.message).toContain(
      `1 item revoked by the owner at ${iso(grantOf(id, 1).endedAt as number)}`,
    );
    expect(answer.message).toContain('use only the active items');
    expect(items.map((it) => String(it.holds).split(' ')[0])).toEqual(['revoked', 'active', 'not']);
  });

  it('a pending request says so per item', async () => {
    const id = await broker.request(agent, [{ path: 'Pend', mode: 'read' }]);
    const answer = await call(agent, 'check_access', { request: id });
    expect(answer.status).toBe('pending');
    expect((answer.items as Record<string, unknown>[])[0]?.holds).toBe('waiting for the owner');
    await broker.gateway.decide(`deny ${id}`);
  });
});

describe('after a revoke or expiry the tools say grant_revoked / grant_expired, not no_grant', () => {
  it('list after revoke all: grant_revoked, when, by the owner; never "request access first"', async () => {
    await broker.fake.mkdir('Rev2');
    const id = await broker.grant([{ path: 'Rev2', mode: 'write' }]);
    await broker.gateway.decide(`revoke ${id}`);
    const revokedAt = iso(grantOf(id).endedAt as number);
    for (const [tool, args] of [
      ['list', { instance: 'personal', path: 'Rev2' }],
      ['mkdir', { instance: 'personal', path: 'Rev2/new' }],
      ['trash', { instance: 'personal', path: 'Rev2/x' }],
      ['move', { instance: 'personal', from: 'Rev2/x', to: 'Rev2/y' }],
    ] as const) {
      const answer = await call(agent, tool, args);
      expect(answer).toMatchObject({
        status: 'refused',
        code: 'grant_revoked',
        ended_at: revokedAt,
        ended_by: 'owner',
        grant: grantOf(id).id,
        request: id,
      });
      expect(answer.message).toContain(`revoked by the owner at ${revokedAt}`);
      expect(answer.message).not.toContain('request access first');
    }
    const line = broker
      .auditLines()
      .filter((l) => l.event === 'refused')
      .at(-1);
    expect(line).toMatchObject({ code: 'grant_revoked', ended_at: revokedAt, ended_by: 'owner' });
  });

  it('list after expiry: grant_expired at the expiry, before and after the sweep; the transfer surface too', async () => {
    await broker.fake.writeFile('Exp2/a.txt', 'a');
    const id = await broker.grant([{ path: 'Exp2', mode: 'read' }]);
    const expiry = iso(grantOf(id).expiresAt);
    const transfer = await broker.transfer();
    for (const sweep of [false, true]) {
      const answers = await later(25 * H, async () => {
        if (sweep) await broker.server.sweep();
        return [
          await call(agent, 'list', { instance: 'personal', path: 'Exp2' }),
          await call(transfer, 'read', { instance: 'personal', path: 'Exp2/a.txt' }),
          await call(transfer, 'check_access', {
            instance: 'personal',
            path: 'Exp2/a.txt',
            mode: 'read',
          }),
        ];
      });
      for (const answer of answers) {
        expect(answer).toMatchObject({
          status: 'refused',
          code: 'grant_expired',
          ended_at: expiry,
        });
        expect(answer.message).toContain(`expired at ${expiry}`);
        expect(answer.ended_by).toBeUndefined();
      }
    }
  });

  it('no_grant only when no grant ever covered the path (a revoked sibling Docs2 does not count)', async () => {
    const id = await broker.grant([{ path: 'Sib2', mode: 'read' }]);
    await broker.gateway.decide(`revoke ${id}`);
    const answer = await call(agent, 'list', { instance: 'personal', path: 'Sib' });
    expect(answer).toMatchObject({ status: 'refused', code: 'no_grant' });
    expect(answer.message).toContain('request read access');
  });
});

describe('isError is true exactly for refused and error', () => {
  it('refused and error set isError; ok and pending do not', async () => {
    const raw = async (name: string, args: Record<string, unknown>) =>
      agent.callTool({ name, arguments: args });
    const refusal = await raw('list', { instance: 'personal', path: 'Never' });
    expect(refusal.isError).toBe(true);
    expect(refusal.structuredContent).toMatchObject({ status: 'refused', code: 'no_grant' });
    const invalid = await raw('list', { instance: 'personal', path: 'a', extra: 1 });
    expect(invalid.isError).toBe(true);

    await broker.grant([{ path: 'Err', mode: 'read' }]);
    broker.fake.faults.status = 503;
    try {
      const error = await raw('list', { instance: 'personal', path: 'Err' });
      expect(error.isError).toBe(true);
      expect(error.structuredContent).toMatchObject({ status: 'error' });
    } finally {
      broker.fake.faults.status = null;
    }

    const okay = await raw('list_instances', {});
    expect(okay.isError).toBe(false);
    const waiting = await raw('request_access', {
      instance: 'personal',
      reason: 'isError check',
      items: [{ path: 'Wait', mode: 'read' }],
    });
    expect(waiting.isError).toBe(false);
    expect(waiting.structuredContent).toMatchObject({ status: 'pending' });
    await broker.gateway.decide(
      `deny ${String((waiting.structuredContent as { request: number }).request)}`,
    );
  });

  it('the transfer surface sets it the same way', async () => {
    const transfer = await broker.transfer();
    const refusal = await transfer.callTool({
      name: 'read',
      arguments: { instance: 'personal', path: 'Never/x' },
    });
    expect(refusal.isError).toBe(true);
    await broker.fake.writeFile('Tok/a.txt', 'a');
    await broker.grant([{ path: 'Tok', mode: 'read' }]);
    const fine = await transfer.callTool({
      name: 'check_access',
      arguments: { instance: 'personal', path: 'Tok/a.txt', mode: 'read' },
    });
    expect(fine.isError).toBe(false);
  });
});
