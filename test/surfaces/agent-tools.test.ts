/**
 * The agent surface through a real MCP client over HTTP: exactly twelve tools, and each
 * tool's ok, refused and error paths, with the audit lines each call leaves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { APP_PASSWORD, AGENT_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const AGENT_TOOLS = [
  'calendar_create_event',
  'calendar_events',
  'check_access',
  'collections',
  'contacts_search',
  'list',
  'list_instances',
  'mkdir',
  'move',
  'request_access',
  'search',
  'trash',
];
const TRANSFER_TOOLS = ['check_access', 'checkin', 'checkout', 'list', 'read', 'write'];

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
});
afterAll(async () => {
  await broker.close();
});
afterEach(() => {
  broker.fake.reset();
  broker.gateway.up = true;
});

function auditFor(correlationId: unknown): Record<string, unknown>[] {
  return broker.auditLines().filter((l) => l.correlation_id === correlationId);
}

function lastCorrelation(tool: string): unknown {
  const lines = broker.auditLines().filter((l) => l.tool === tool);
  return lines[lines.length - 1]?.correlation_id;
}

describe('tool lists', () => {
  it('the agent surface lists exactly the twelve agent tools and no transfer tool', async () => {
    const { tools } = await agent.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(AGENT_TOOLS);
    for (const name of ['read', 'write', 'checkout', 'checkin']) {
      expect(tools.some((t) => t.name === name)).toBe(false);
    }
  });

  it('the transfer surface lists exactly its six tools and no agent tool but list', async () => {
    const transfer = await broker.transfer();
    const { tools } = await transfer.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TRANSFER_TOOLS);
    for (const name of ['request_access', 'list_instances', 'search', 'move', 'trash', 'mkdir']) {
      expect(tools.some((t) => t.name === name)).toBe(false);
    }
  });

  it('a transfer tool called on the agent surface is unknown there', async () => {
    await expect(
      agent.callTool({ name: 'read', arguments: { instance: 'personal', path: 'a' } }),
    ).rejects.toThrow(/unknown tool/);
  });

  it('annotations say what each tool does', async () => {
    const { tools } = await agent.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['list', 'search', 'list_instances', 'check_access']) {
      expect(byName.get(name)?.annotations?.readOnlyHint).toBe(true);
    }
    expect(byName.get('search')?.annotations).toMatchObject({
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    });
    expect(byName.get('trash')?.annotations?.destructiveHint).toBe(true);
    expect(byName.get('move')?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('mkdir')?.annotations?.readOnlyHint).toBe(false);
    for (const tool of tools) {
      expect(tool.inputSchema.additionalProperties).toBe(false);
      expect(tool.outputSchema?.additionalProperties).toBe(false);
    }
  });
});

describe('list_instances', () => {
  it('reveals names and discovery flags only: no URL, user or secret', async () => {
    const result = await agent.callTool({ name: 'list_instances', arguments: {} });
    const text = JSON.stringify(result);
    expect(result.structuredContent).toMatchObject({
      status: 'ok',
      instances: [
        { name: 'personal', discovery: false },
        { name: 'shared', discovery: true },
      ],
    });
    const port = new URL(broker.fake.url).port;
    for (const secret of [
      broker.fake.url,
      port,
      broker.fake.user,
      APP_PASSWORD,
      AGENT_TOKEN,
      TRANSFER_TOKEN,
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('request_access and check_access', () => {
  it('stores a valid request, audits it, posts it, and answers pending with its number', async () => {
    const answer = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'summarise the report',
      items: [
        { path: '/Reports/Q1', mode: 'read' },
        { path: 'Drafts', mode: 'write' },
      ],
    });
    expect(answer.status).toBe('pending');
    const id = answer.request as number;
    expect(answer.message).toContain(`#${id}`);
    // The canonical form was stored (leading slash dropped).
    expect(broker.store.getRequest(id)?.items.map((i) => i.path)).toEqual(['Reports/Q1', 'Drafts']);
    expect(broker.gateway.posted.some((r) => r.id === id)).toBe(true);
    expect(broker.auditLines().some((l) => l.event === 'request' && l.request === id)).toBe(true);

    const waiting = await call(agent, 'check_access', { request: id });
    expect(waiting).toMatchObject({ status: 'pending', state: 'pending', request: id });

    await broker.gateway.decide(`approve ${id} 1`);
    const decided = await call(agent, 'check_access', { request: id });
    expect(decided).toMatchObject({ status: 'ok', state: 'partially_approved' });
    const items = decided.items as { granted: boolean; expires_at?: string }[];
    expect(items[0]?.granted).toBe(true);
    expect(typeof items[0]?.expires_at).toBe('string');
    expect(items[1]?.granted).toBe(false);

    const all = await call(agent, 'check_access', {});
    expect(all.status).toBe('ok');
    expect(all.grants).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ request: id, path: 'Reports/Q1', mode: 'read' }),
      ]),
    );
  });

  it('a denied request is reported as denied', async () => {
    const answer = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'x',
      items: [{ path: 'Secret', mode: 'read' }],
    });
    await broker.gateway.decide(`deny ${answer.request as number}`);
    expect(await call(agent, 'check_access', { request: answer.request })).toMatchObject({
      status: 'ok',
      state: 'denied',
    });
  });

  it('refuses an unknown request number', async () => {
    expect(await call(agent, 'check_access', { request: 99_999 })).toMatchObject({
      status: 'refused',
      code: 'unknown_request',
    });
  });

  it('refuses an unknown instance before storing anything', async () => {
    const before = broker.gateway.posted.length;
    const answer = await call(agent, 'request_access', {
      instance: 'elsewhere',
      reason: 'x',
      items: [{ path: 'a', mode: 'read' }],
    });
    expect(answer).toMatchObject({ status: 'refused', code: 'unknown_instance' });
    expect(broker.gateway.posted.length).toBe(before);
  });

  it('refuses the whole request when any item is not a canonical path, and stores nothing', async () => {
    const before = broker.gateway.posted.length;
    for (const bad of ['a/../b', 'a//b', 'trashbin/x', 'a\u202Eb', 'a%2e%2e', 'x/']) {
      const answer = await call(agent, 'request_access', {
        instance: 'personal',
        reason: 'x',
        items: [
          { path: 'fine', mode: 'read' },
          { path: bad, mode: 'read' },
        ],
      });
      expect(answer).toMatchObject({ status: 'refused', code: 'invalid_path' });
      expect(answer.message).toMatch(/^item 2/);
    }
    expect(broker.gateway.posted.length).toBe(before);
  });

  it('caps items at 50 and the reason at 500 characters', async () => {
    const items = Array.from({ length: 51 }, (_, i) => ({ path: `f${i}`, mode: 'read' }));
    expect(
      await call(agent, 'request_access', { instance: 'personal', reason: 'x', items }),
    ).toMatchObject({
      status: 'refused',
      code: 'invalid_arguments',
    });
    expect(
      await call(agent, 'request_access', {
        instance: 'personal',
        reason: 'r'.repeat(501),
        items: [{ path: 'a', mode: 'read' }],
      }),
    ).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
  });

  it('refuses a reason with hidden characters (bidi override, zero width, controls)', async () => {
    for (const reason of ['ok\u202Eevil', 'a\u200Bb', 'bell\u0007']) {
      expect(
        await call(agent, 'request_access', {
          instance: 'personal',
          reason,
          items: [{ path: 'a', mode: 'read' }],
        }),
      ).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    }
  });

  it('answers error when the approval channel is down; nothing is stored', async () => {
    broker.gateway.up = false;
    const before = broker.gateway.posted.length;
    const answer = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'x',
      items: [{ path: 'a', mode: 'read' }],
    });
    expect(answer).toMatchObject({
      status: 'error',
      code: 'approval_unavailable',
      message: 'approval channel unavailable; existing grants still work',
      retry: true,
    });
    expect(broker.gateway.posted.length).toBe(before);
  });

  it('refuses unknown argument keys with an envelope, audited as refused', async () => {
    const answer = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'x',
      items: [{ path: 'a', mode: 'read' }],
      grant_immediately: true,
    });
    expect(answer).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    const cid = lastCorrelation('request_access');
    expect(auditFor(cid).map((l) => l.event)).toEqual(['refused']);
  });
});

describe('list', () => {
  it('ok: lists a granted folder, with an intent and an outcome audit line', async () => {
    await broker.fake.writeFile('Listing/one.txt', '1');
    await broker.fake.mkdir('Listing/sub');
    await broker.grant([{ path: 'Listing', mode: 'read' }]);
    const answer = await call(agent, 'list', { instance: 'personal', path: 'Listing' });
    expect(answer.status).toBe('ok');
    expect(answer.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'one.txt', kind: 'file', size: 1 }),
        expect.objectContaining({ name: 'sub', kind: 'folder' }),
      ]),
    );
    const lines = auditFor(lastCorrelation('list'));
    expect(lines.map((l) => [l.event, l.outcome])).toEqual([
      ['intent', undefined],
      ['outcome', 'ok'],
    ]);
    expect(lines[0]).toMatchObject({ surface: 'agent', instance: 'personal', path: 'Listing' });
  });

  it('refused: no grant, one refusal line, Nextcloud not asked', async () => {
    broker.fake.requests.length = 0;
    const answer = await call(agent, 'list', { instance: 'personal', path: 'NotGranted' });
    expect(answer).toMatchObject({ status: 'refused', code: 'no_grant' });
    expect(answer.hint).toMatch(/request_access/);
    expect(auditFor(lastCorrelation('list')).map((l) => l.event)).toEqual(['refused']);
    expect(broker.fake.requests).toEqual([]);
  });

  it('refused: a sibling with a common prefix is not covered', async () => {
    await broker.grant([{ path: 'Pre', mode: 'read' }]);
    expect(await call(agent, 'list', { instance: 'personal', path: 'Prefix' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });

  it('error: Nextcloud down answers error with retry advice, audited as the outcome', async () => {
    await broker.grant([{ path: 'Down', mode: 'read' }]);
    broker.fake.faults.status = 503;
    const answer = await call(agent, 'list', { instance: 'personal', path: 'Down' });
    expect(answer).toMatchObject({ status: 'error', retry: true });
    expect(answer.code).toBeDefined();
    const lines = auditFor(lastCorrelation('list'));
    expect(lines.map((l) => [l.event, l.outcome])).toEqual([
      ['intent', undefined],
      ['outcome', 'error'],
    ]);
  });

  it('discovery: the root of a discovery instance lists names only', async () => {
    await broker.fake.writeFile('Top/file.txt', 'x');
    const answer = await call(agent, 'list', { instance: 'shared', path: '' });
    expect(answer).toMatchObject({ status: 'ok', discovery: true });
    const entries = answer.entries as Record<string, unknown>[];
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) expect(Object.keys(e).sort()).toEqual(['kind', 'name']);
    expect(auditFor(lastCorrelation('list'))[0]).toMatchObject({
      event: 'intent',
      discovery: true,
    });
  });

  it('refused: the root of a non-discovery instance', async () => {
    expect(await call(agent, 'list', { instance: 'personal', path: '/' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });
});

describe('mkdir', () => {
  it('ok, refused without a grant, refused (conflict) when it exists', async () => {
    await broker.fake.mkdir('Made');
    await broker.grant([{ path: 'Made', mode: 'write' }]);
    expect(
      await call(agent, 'mkdir', { instance: 'personal', path: 'Made/missing/deeper' }),
    ).toMatchObject({
      status: 'refused',
      code: 'not_found',
    });
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'Made/new' })).toMatchObject({
      status: 'ok',
      path: 'Made/new',
    });
    expect(await broker.fake.exists('Made/new')).toBe(true);
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'Made/new' })).toMatchObject({
      status: 'refused',
      code: 'conflict',
    });
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'Elsewhere' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });

  it('refused: a read grant does not allow mkdir', async () => {
    await broker.grant([{ path: 'ReadOnly', mode: 'read' }]);
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'ReadOnly/x' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });

  it('error: a Nextcloud failure answers error', async () => {
    await broker.grant([{ path: 'MkErr', mode: 'write' }]);
    broker.fake.faults.status = 507;
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'MkErr/x' })).toMatchObject({
      status: 'error',
      code: 'insufficient_storage',
    });
  });
});

describe('move', () => {
  it('ok: moves within write grants; never overwrites (conflict); refuses without write on the target', async () => {
    await broker.fake.writeFile('Mv/a.txt', 'a');
    await broker.fake.writeFile('Mv/b.txt', 'b');
    await broker.grant([{ path: 'Mv', mode: 'write' }]);
    expect(
      await call(agent, 'move', { instance: 'personal', from: 'Mv/a.txt', to: 'Mv/c.txt' }),
    ).toMatchObject({
      status: 'ok',
      from: 'Mv/a.txt',
      to: 'Mv/c.txt',
    });
    expect(await broker.fake.exists('Mv/c.txt')).toBe(true);
    expect(
      await call(agent, 'move', { instance: 'personal', from: 'Mv/c.txt', to: 'Mv/b.txt' }),
    ).toMatchObject({
      status: 'refused',
      code: 'conflict',
    });
    expect((await broker.fake.readFile('Mv/b.txt'))?.toString()).toBe('b');
    expect(
      await call(agent, 'move', { instance: 'personal', from: 'Mv/c.txt', to: 'Outside/c.txt' }),
    ).toMatchObject({ status: 'refused', code: 'no_grant' });
  });

  it('refused: a Unicode-only rename (same canonical path)', async () => {
    await broker.grant([{ path: 'Uni', mode: 'write' }]);
    expect(
      await call(agent, 'move', {
        instance: 'personal',
        from: 'Uni/caf\u00e9',
        to: 'Uni/cafe\u0301',
      }),
    ).toMatchObject({ status: 'refused', code: 'same_path' });
  });

  it('error: Nextcloud unreachable', async () => {
    await broker.fake.writeFile('MvErr/a', 'a');
    await broker.grant([{ path: 'MvErr', mode: 'write' }]);
    broker.fake.faults.status = 500;
    expect(
      await call(agent, 'move', { instance: 'personal', from: 'MvErr/a', to: 'MvErr/b' }),
    ).toMatchObject({
      status: 'error',
      retry: true,
    });
  });
});

describe('trash', () => {
  it('ok: moves to the trash bin; refused without a grant', async () => {
    await broker.fake.writeFile('Tr/old.txt', 'old');
    await broker.grant([{ path: 'Tr', mode: 'write' }]);
    const trashed = await call(agent, 'trash', { instance: 'personal', path: 'Tr/old.txt' });
    expect(trashed).toMatchObject({
      status: 'ok',
      path: 'Tr/old.txt',
      trashed_as: expect.stringMatching(/^Tr\/old \(trashed [a-z2-7]{8}\)\.txt$/),
    });
    expect(broker.fake.trashed()).toContain(trashed['trashed_as']);
    expect(await call(agent, 'trash', { instance: 'personal', path: 'Other/x' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });

  it('refused when the trash bin is off: nothing is deleted', async () => {
    await broker.fake.writeFile('NoBin/keep.txt', 'keep');
    await broker.grant([{ path: 'NoBin', mode: 'write' }]);
    broker.fake.faults.trashbin = false;
    const answer = await call(agent, 'trash', { instance: 'personal', path: 'NoBin/keep.txt' });
    expect(answer).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(await broker.fake.exists('NoBin/keep.txt')).toBe(true);
    expect(broker.fake.requests.some((r) => r.method === 'DELETE')).toBe(false);
  });

  it('error: a Nextcloud failure answers error', async () => {
    await broker.fake.writeFile('TrErr/x', 'x');
    await broker.grant([{ path: 'TrErr', mode: 'write' }]);
    broker.fake.faults.status = 503;
    expect(await call(agent, 'trash', { instance: 'personal', path: 'TrErr/x' })).toMatchObject({
      status: 'error',
    });
    expect(await broker.fake.exists('TrErr/x')).toBe(true);
  });
});
