/**
 * A new kind of resource is one row of the table in broker/base/kinds.ts. Here an empty
 * test kind, "notes" (a note list, named by one component, read only), is added to the
 * table and nothing else: the wall, the request checks, the tools' schemas, the approval
 * messages and the grant store's checks all take it from there. What a real kind adds
 * besides is its Nextcloud client and its tools, and one migration that widens the grant
 * database's own CHECK (the database refuses a kind it was not migrated for, on purpose:
 * see the last test).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { GrantView, Kind } from '../../broker/base/domain.js';
import { GrantStore } from '../../broker/grants/index.js';
import { renderLine, itemSpans } from '../../broker/approval/format.js';
import { CollectionsInputSchema } from '../../broker/surfaces/agent/collections.js';
import { RequestAccessInputSchema } from '../../broker/surfaces/agent/request-access.js';
import { KindArgSchema } from '../../broker/surfaces/schemas.js';
import { decide } from '../../broker/wall.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

vi.mock(import('../../broker/base/kinds.js'), async (importOriginal) => {
  const original = await importOriginal();
  const KINDS = {
    ...original.KINDS,
    notes: {
      paths: 'one',
      modes: ['read'],
      one: 'note list',
      argument: 'notebook',
      access: 'read only',
      refuses: 'notes can only be read',
    },
  } as const;
  return { ...original, KINDS, ...original.kindRules(KINDS) } as unknown as typeof original;
});

/** The test kind: not in the type (the table in the source does not have it). */
const NOTES = 'notes' as Kind;
const NOW = 1_000;

const grant = (kind: Kind, path: string): GrantView =>
  Object.freeze({
    id: 7,
    requestId: 3,
    instance: 'personal',
    kind,
    path,
    mode: 'read',
    expiresAt: NOW + 1000,
  });

describe('the wall decides on the new kind from the table alone', () => {
  const policy = { discovery: false };
  const read = (name: unknown, grants: GrantView[]) =>
    decide(
      { op: 'collection', instance: 'personal', kind: NOTES as 'calendar', name, access: 'read' },
      grants,
      policy,
      NOW,
    );

  it('a grant on one note list allows reading exactly that one', () => {
    expect(read('work', [grant(NOTES, 'work')])).toMatchObject({
      ok: true,
      paths: ['work'],
      grantIds: [7],
    });
    expect(read('workshop', [grant(NOTES, 'work')])).toMatchObject({ ok: false, code: 'no_grant' });
  });

  it('a grant of another kind on the same name covers nothing of it, and the refusal names it', () => {
    const refused = read('work', [grant('files', 'work'), grant('calendar', 'work')]);
    expect(refused).toMatchObject({ ok: false, code: 'no_grant' });
    expect(refused.ok ? '' : refused.reason).toContain('note list "work"');
  });

  it('refuses what its row refuses: a write, a name of two components', () => {
    const create = decide(
      {
        op: 'collection',
        instance: 'personal',
        kind: NOTES as 'calendar',
        name: 'work',
        access: 'create',
      },
      [grant(NOTES, 'work')],
      policy,
      NOW,
    );
    expect(create).toEqual({ ok: false, code: 'no_grant', reason: 'notes can only be read' });
    expect(read('work/x', [grant(NOTES, 'work')])).toMatchObject({
      ok: false,
      code: 'invalid_path',
      reason: expect.stringMatching(/^notebook: .*one component/) as unknown,
    });
  });

  it('lists the granted names of the kind', () => {
    expect(
      decide(
        { op: 'collections', instance: 'personal', kind: NOTES as 'calendar' },
        [grant(NOTES, 'work'), grant('calendar', 'cal')],
        policy,
        NOW,
      ),
    ).toMatchObject({ ok: true, paths: ['work'] });
  });
});

describe('the tools take the new kind in their schemas', () => {
  it('request_access items and the collections tool name it; the descriptions list it', () => {
    expect(KindArgSchema.parse('notes')).toBe('notes');
    expect(KindArgSchema.description).toContain('"notes"');
    expect(
      RequestAccessInputSchema.safeParse({
        instance: 'personal',
        reason: 'r',
        items: [{ kind: 'notes', path: 'work', mode: 'read' }],
      }).success,
    ).toBe(true);
    expect(RequestAccessInputSchema.shape.items.description).toContain(
      'A notes item names one note list (read only)',
    );
    expect(CollectionsInputSchema.parse({ instance: 'personal', kind: 'notes' }).kind).toBe(
      'notes',
    );
    expect(KindArgSchema.safeParse('deck').success).toBe(false);
  });
});

describe('the approval message names the new kind', () => {
  it('read note list `work`', () => {
    expect(renderLine(itemSpans({ kind: NOTES, path: 'work', mode: 'read' })).plain).toBe(
      'read note list `work`',
    );
  });
});

describe('the request checks refuse what its row refuses, before the owner is asked', () => {
  let broker: Broker;
  let agent: Client;
  beforeAll(async () => {
    broker = await startBroker();
    agent = await broker.agent();
  });
  afterAll(async () => {
    await broker.close();
  });

  const ask = (path: string, mode: 'read' | 'write') =>
    call(agent, 'request_access', {
      instance: 'personal',
      reason: 'notes',
      items: [{ kind: 'notes', path, mode }],
    });

  it("a write: refused in the table's words, with the modes it has", async () => {
    expect(await ask('work', 'write')).toMatchObject({
      status: 'refused',
      code: 'invalid_arguments',
      message: 'item 1: notes can only be read; nothing was requested',
      hint: 'send the item again with mode "read"',
    });
  });

  it('a name of two components: refused, named as the table names the kind', async () => {
    expect(await ask('work/x', 'read')).toMatchObject({
      status: 'refused',
      code: 'invalid_path',
      hint: 'name the calendar, address book or note list by its name as collections lists it, e.g. "personal"',
    });
    expect(broker.gateway.posted).toEqual([]);
  });
});

describe('the grant store', () => {
  it('checks an item of the new kind by its row; the database refuses the kind until a migration widens it', () => {
    const store = GrantStore.open(':memory:', { now: () => NOW });
    try {
      const items = (mode: 'read' | 'write', path = 'work') => ({
        instance: 'personal',
        reason: 'r',
        items: [{ kind: NOTES, path, mode }],
      });
      expect(() => store.createRequest(items('write'))).toThrow('notes can only be read');
      expect(() => store.createRequest(items('read', 'a/b'))).toThrow(/one component/);
      // Past the store's own checks, which read the table, the schema's CHECK decides.
      expect(() => store.createRequest(items('read'))).toThrow(/CHECK constraint failed: kind IN/);
    } finally {
      store.close();
    }
  });
});
