import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { GrantStore, GrantStoreError, SCHEMA_VERSION } from '../../broker/grants/index.js';
import {
  DAY,
  HOUR,
  T0,
  approveAll,
  manualClock,
  memoryStore,
  fileStore as tempFileStore,
  twoItems,
} from './helpers.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

const fileStore = (clock = manualClock()) => tempFileStore(cleanups, clock);

describe('attack: approving a request that can no longer be decided', () => {
  it('a request swept as expired is refused as expired, and grants nothing', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(12 * HOUR);
    store.expirePending(12 * HOUR);
    expect(store.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'expired' });
    expect(store.decide(r.id, { kind: 'deny', by: 'console' })).toMatchObject({
      ok: false,
      code: 'expired',
    });
    expect(store.activeGrants()).toEqual([]);
  });

  it('a request past the timeout but not yet swept is refused and marked expired', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(12 * HOUR); // exactly the timeout: too late
    expect(store.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'expired' });
    expect(store.getRequest(r.id)).toMatchObject({
      state: 'expired',
      decidedAt: T0 + 12 * HOUR,
      decidedBy: null,
    });
    expect(store.pendingRequests()).toEqual([]);
    expect(store.activeGrants()).toEqual([]);
  });

  it('one millisecond before the timeout the request can still be approved', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(12 * HOUR - 1);
    expect(store.decide(r.id, approveAll).ok).toBe(true);
  });

  it('the pending timeout given at open is the one enforced', () => {
    const { store, clock } = memoryStore(manualClock(), 30 * 60_000);
    const r = store.createRequest(twoItems);
    clock.advance(30 * 60_000);
    expect(store.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'expired' });
    expect(() => GrantStore.open(':memory:', { now: clock.now, pendingTimeoutMs: 0 })).toThrow(
      GrantStoreError,
    );
  });

  it('a request discarded at restart is refused, approve and deny alike', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    store.discardAllPending();
    const res = store.decide(r.id, approveAll);
    expect(res).toMatchObject({ ok: false, code: 'expired' });
    expect(!res.ok && res.message).toMatch(/discarded/);
    expect(store.decide(r.id, { kind: 'deny', by: 'console' }).ok).toBe(false);
    expect(store.activeGrants()).toEqual([]);
  });

  it('a denied request cannot be approved later', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { kind: 'deny', by: 'console' });
    expect(store.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'already_decided' });
    expect(store.getRequest(r.id)?.state).toBe('denied');
    expect(store.activeGrants()).toEqual([]);
  });

  it('an approval replayed (retried message) grants nothing more', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, approveAll);
    expect(store.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'already_decided' });
    expect(store.activeGrants()).toHaveLength(2);
  });

  it('a partial approval cannot be widened by approving the rest afterwards', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, items: [1] });
    expect(store.decide(r.id, { ...approveAll, items: [2] })).toMatchObject({
      ok: false,
      code: 'already_decided',
    });
    expect(store.activeGrants().map((g) => g.itemNo)).toEqual([1]);
  });

  it('an approval after a revoke does not bring the grants back', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, approveAll);
    store.revokeRequest(r.id);
    expect(store.decide(r.id, approveAll).ok).toBe(false);
    expect(store.activeGrants()).toEqual([]);
  });
});

describe('attack: using a grant after it was revoked', () => {
  it('a revoked grant is not active, not returned again, and stays revoked', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    const res = store.decide(r.id, approveAll);
    const ids = res.ok ? res.granted.map((g) => g.id) : [];
    expect(store.revokeGrants([ids[0] ?? 0])).toHaveLength(1);
    expect(store.activeGrants().map((g) => g.id)).toEqual([ids[1]]);
    expect(store.grant(ids[0] ?? 0)?.state).toBe('revoked');
    clock.advance(DAY);
    // Expiry does not overwrite a revoke, and reports only what was still active.
    expect(store.expireGrants().map((g) => g.id)).toEqual([ids[1]]);
    expect(store.grant(ids[0] ?? 0)?.state).toBe('revoked');
  });
});

describe('attack: the expiry instant', () => {
  it('now == expiresAt is not active; one millisecond before is', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, durationMs: HOUR });
    clock.set(T0 + HOUR - 1);
    expect(store.activeGrants()).toHaveLength(2);
    expect(store.expireGrants()).toEqual([]);
    clock.set(T0 + HOUR);
    expect(store.activeGrants()).toEqual([]);
    expect(store.revokeAll()).toEqual([]);
    expect(store.expireGrants().map((g) => [g.state, g.endedAt])).toEqual([
      ['expired', T0 + HOUR],
      ['expired', T0 + HOUR],
    ]);
  });

  it('expiry counts from the approval, not from the request', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(11 * HOUR);
    const res = store.decide(r.id, { ...approveAll, durationMs: HOUR });
    expect(res.ok && res.granted[0]?.expiresAt).toBe(T0 + 12 * HOUR);
  });
});

describe('attack: the clock going backwards', () => {
  it('does not resurrect a grant once it was marked expired', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, durationMs: HOUR });
    clock.advance(2 * HOUR);
    expect(store.expireGrants()).toHaveLength(2);
    clock.set(T0); // back to before the expiry
    expect(store.activeGrants()).toEqual([]);
    expect(store.grant(1)?.state).toBe('expired');
    expect(store.revokeAll()).toEqual([]);
  });

  it('does not resurrect a revoked grant', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(HOUR);
    store.decide(r.id, approveAll);
    store.revokeAll();
    clock.set(T0 - DAY);
    expect(store.activeGrants()).toEqual([]);
  });

  it('does not extend a grant: its expiry instant is fixed at approval', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, durationMs: HOUR });
    clock.set(T0 - DAY);
    expect(store.activeGrants().map((g) => g.expiresAt)).toEqual([T0 + HOUR, T0 + HOUR]);
  });
});

describe('attack: restart', () => {
  it('grants survive close and reopen; pending requests are discarded; numbers never repeat', () => {
    const { open, clock } = fileStore();
    const s1 = open();
    const approved = s1.createRequest(twoItems);
    s1.decide(approved.id, approveAll);
    const pending = s1.createRequest(twoItems);
    const before = s1.activeGrants();
    s1.close();

    clock.advance(HOUR);
    const s2 = open();
    expect(s2.activeGrants()).toEqual(before);
    expect(s2.discardAllPending().map((r) => r.id)).toEqual([pending.id]);
    expect(s2.pendingRequests()).toEqual([]);
    expect(s2.decide(pending.id, approveAll)).toMatchObject({ ok: false, code: 'expired' });
    const next = s2.createRequest(twoItems);
    expect(next.id).toBeGreaterThan(pending.id);
    s2.close();

    const s3 = open();
    expect(s3.getRequest(pending.id)?.state).toBe('discarded');
    expect(s3.activeGrants()).toEqual(before);
  });

  it('revokes and expiries survive a reopen (a revoked grant stays revoked)', () => {
    const { open } = fileStore();
    const s1 = open();
    const r = s1.createRequest(twoItems);
    s1.decide(r.id, approveAll);
    s1.revokeGrants([1]);
    s1.close();
    const s2 = open();
    expect(s2.activeGrants().map((g) => g.id)).toEqual([2]);
    expect(s2.grant(1)?.state).toBe('revoked');
  });

  it('uses WAL journalling on a file', () => {
    const { open, file } = fileStore();
    open();
    const raw = new Database(file, { readonly: true });
    cleanups.unshift(() => raw.close());
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  });
});

describe('attack: editing the database behind the store’s back', () => {
  function withRaw() {
    const ctx = fileStore();
    const store = ctx.open();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, items: [1] });
    store.revokeAll();
    const pending = store.createRequest(twoItems);
    const raw = new Database(ctx.file);
    cleanups.unshift(() => raw.close());
    return { ...ctx, store, raw, r, pending };
  }

  it.each([
    ['reactivating a revoked grant', `UPDATE grants SET state = 'active' WHERE id = 1`],
    ['extending a grant', `UPDATE grants SET expires_at = expires_at + 1 WHERE id = 1`],
    ['widening a grant’s path', `UPDATE grants SET path = 'Documents' WHERE id = 1`],
    ['upgrading a grant’s mode', `UPDATE grants SET mode = 'write' WHERE id = 1`],
    ['moving a grant to another instance', `UPDATE grants SET instance = 'work' WHERE id = 1`],
    ['rewriting when a grant ended', `UPDATE grants SET ended_at = 0 WHERE id = 1`],
    ['deleting a grant', `DELETE FROM grants WHERE id = 1`],
    ['re-opening a decided request', `UPDATE requests SET state = 'pending' WHERE id = 1`],
    ['changing who decided', `UPDATE requests SET decided_by = 'x' WHERE id = 1`],
    ['deleting a request', `DELETE FROM requests WHERE id = 2`],
    ['editing an item', `UPDATE items SET path = 'Documents' WHERE request_id = 2`],
    ['adding an item to a decided request', `INSERT INTO items VALUES (1, 3, 'x', 'read')`],
    [
      'granting from a pending request',
      `INSERT INTO grants (request_id, item_no, instance, path, mode, state, created_at, expires_at)
       VALUES (2, 1, 'personal', 'Documents/Reports', 'read', 'active', 0, 99999999999999)`,
    ],
    [
      'granting a path other than the item’s',
      `INSERT INTO grants (request_id, item_no, instance, path, mode, state, created_at, expires_at)
       VALUES (1, 2, 'personal', 'Documents', 'write', 'active', 0, 99999999999999)`,
    ],
    [
      'granting a mode other than the item’s',
      `INSERT INTO grants (request_id, item_no, instance, path, mode, state, created_at, expires_at)
       VALUES (1, 2, 'personal', 'Documents/Notes/todo.md', 'read', 'active', 0, 99999999999999)`,
    ],
    ['an unknown grant state', `UPDATE grants SET state = 'forever' WHERE id = 1`],
  ])('the schema refuses %s', (_name, sql) => {
    const { raw, store } = withRaw();
    const grantsBefore = raw.prepare('SELECT * FROM grants').all();
    expect(() => raw.exec(sql)).toThrow();
    expect(raw.prepare('SELECT * FROM grants').all()).toEqual(grantsBefore);
    expect(store.activeGrants()).toEqual([]);
  });

  it('a row that does not parse stops the store instead of being trusted', () => {
    const { raw, store } = withRaw();
    raw.pragma('ignore_check_constraints = ON');
    raw.exec(
      'DROP TRIGGER grants_end_once; DROP TRIGGER grants_fixed; DROP TRIGGER grants_end_fixed',
    );
    raw.exec(`UPDATE grants SET state = 'active', ended_at = NULL, mode = 'admin' WHERE id = 1`);
    expect(() => store.activeGrants()).toThrow(GrantStoreError);
    expect(() => store.activeGrants()).toThrow(/does not match the schema/);
  });

  it('refuses to open a database written by a newer broker', () => {
    const { open, file } = fileStore();
    open().close();
    const raw = new Database(file);
    raw.pragma('user_version = 99');
    raw.close();
    expect(() => open()).toThrow(
      new RegExp(`schema version 99, newer than this broker's ${SCHEMA_VERSION}`),
    );
  });
});
