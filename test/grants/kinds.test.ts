/**
 * Kinds of grants in the store: migration 5 marks every grant a broker made before as
 * `files`; a collection item names one component; contacts are read only; a grant
 * keeps its item's kind, and the schema refuses anything else even from a bug.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { decide } from '../../broker/wall.js';
import { approveAll, fileStore, memoryStore, writeOldDatabase } from './helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});
const POLICY = { discovery: false };

describe('migration 5', () => {
  it('marks the grants of a database from the previous broker as files grants', () => {
    const { open, file, clock } = fileStore(cleanups);
    writeOldDatabase(file, 4, 'write');
    const store = open();
    const grant = store.grant(1);
    expect(grant).toMatchObject({ kind: 'files', path: 'Documents', state: 'active' });
    expect(store.getRequest(1)?.items[0]?.kind).toBe('files');
    const grants = store.activeGrants();
    const now = clock.now();
    expect(
      decide({ op: 'read', instance: 'personal', path: 'Documents/a' }, grants, POLICY, now).ok,
    ).toBe(true);
    // A calendar that happens to be named like the files grant is not covered by it.
    const asCalendar = decide(
      {
        op: 'collection',
        instance: 'personal',
        kind: 'calendar',
        name: 'Documents',
        access: 'read',
      },
      grants,
      POLICY,
      now,
    );
    expect(asCalendar).toMatchObject({ ok: false, code: 'no_grant' });
  });
});

describe('collection items', () => {
  it('records and grants a calendar item with its kind', () => {
    const { store } = memoryStore();
    const r = store.createRequest({
      instance: 'personal',
      reason: 'plan the week',
      items: [{ kind: 'calendar', path: 'personal', mode: 'write' }],
    });
    expect(r.items[0]).toMatchObject({ kind: 'calendar', path: 'personal', mode: 'write' });
    const res = store.decide(r.id, approveAll);
    expect(res.ok && res.granted[0]?.kind).toBe('calendar');
  });

  it('refuses a write item of kind contacts', () => {
    const { store } = memoryStore();
    expect(() =>
      store.createRequest({
        instance: 'personal',
        reason: 'r',
        items: [{ kind: 'contacts', path: 'contacts', mode: 'write' }],
      }),
    ).toThrow(/read only/);
  });

  it('refuses a collection item with a slash in its name', () => {
    const { store } = memoryStore();
    expect(() =>
      store.createRequest({
        instance: 'personal',
        reason: 'r',
        items: [{ kind: 'calendar', path: 'personal/x', mode: 'read' }],
      }),
    ).toThrow(/one component/);
  });

  it('has the schema refuse a contacts write item, a slashed name and a grant of another kind', () => {
    const { open, file } = fileStore(cleanups);
    open().close();
    const db = new Database(file);
    cleanups.unshift(() => db.close());
    db.exec(
      `INSERT INTO requests (instance, reason, state, created_at) VALUES ('p', 'r', 'pending', 0)`,
    );
    const item = db.prepare(
      'INSERT INTO items (request_id, n, kind, path, mode) VALUES (1, ?, ?, ?, ?)',
    );
    expect(() => item.run(1, 'contacts', 'contacts', 'write')).toThrow(/read only/);
    expect(() => item.run(1, 'calendar', 'a/b', 'read')).toThrow(/one component/);
    expect(() => item.run(1, 'deck', 'a', 'read')).toThrow(/CHECK/);
    item.run(1, 'calendar', 'personal', 'read');
    db.exec(`UPDATE requests SET state = 'approved', decided_at = 1, decided_by = 'x'`);
    const grant = db.prepare(
      `INSERT INTO grants (request_id, item_no, instance, kind, path, mode, state, created_at, expires_at)
       VALUES (1, 1, 'p', ?, 'personal', 'read', 'active', 1, 100)`,
    );
    expect(() => grant.run('files')).toThrow(/as requested/);
    grant.run('calendar');
    expect(() => db.exec(`UPDATE grants SET kind = 'files'`)).toThrow(/never change/);
  });
});
