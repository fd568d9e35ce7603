/**
 * The checkout locks kept beside the grants (migration 4): a lock recorded at checkout
 * survives a restart with its token and grants, is marked for release when a grant it
 * relies on ends (revoked or expired, also while nobody was looking) or its LOCK times
 * out, moves held → releasing → released and never back, and nothing rewrites or
 * deletes it.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../broker/grants/index.js';
import {
  approveAll,
  DAY,
  fileStore,
  HOUR,
  memoryStore,
  twoItems,
  writeOldDatabase,
} from './helpers.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

const TOKEN = 'opaquelocktoken:6e0079b1-5873-480e-aa6a-824d1c64bcd1';

/** A store with one approved request (two grants) and a checkout under its write grant. */
function withCheckout(store = memoryStore().store, now = Date.UTC(2026, 0, 1)) {
  const request = store.createRequest(twoItems);
  const decided = store.decide(request.id, approveAll);
  if (!decided.ok) throw new Error('not approved');
  const write = decided.granted.find((g) => g.mode === 'write');
  if (write === undefined) throw new Error('no write grant');
  const lock = store.checkoutLocks.add({
    instance: 'personal',
    path: 'Documents/Notes/todo.md',
    token: TOKEN,
    grantIds: [write.id],
    lockedAt: now,
    lockExpiresAt: now + 600_000,
  });
  return { store, request, write, lock };
}

describe('a checkout lock survives a restart', () => {
  it('is found by its token after the database is opened again, with its grants and request', () => {
    const { open } = fileStore(cleanups);
    const first = open();
    const { request, write } = withCheckout(first);
    first.close();
    const again = open();
    const lock = again.checkoutLocks.byToken(TOKEN);
    expect(lock).toMatchObject({
      instance: 'personal',
      path: 'Documents/Notes/todo.md',
      token: TOKEN,
      grantIds: [write.id],
      requestIds: [request.id],
      state: 'held',
      attempts: 0,
    });
    expect(again.openCheckoutLocks().map((l) => l.token)).toEqual([TOKEN]);
  });

  it('is looked up by the token itself: another token finds nothing', () => {
    const { store } = withCheckout();
    expect(store.checkoutLocks.byToken(`${TOKEN}x`)).toBeUndefined();
    expect(store.checkoutLocks.byToken(TOKEN.toUpperCase())).toBeUndefined();
  });
});

describe('what marks a lock for release', () => {
  it('a revoke of its grant: releasing (revoked), due at once; other locks stay held', () => {
    const { store, write, lock } = withCheckout();
    const readOnly = store.checkoutLocks.add({
      instance: 'personal',
      path: 'Documents/Reports/a.txt',
      token: `${TOKEN}-2`,
      grantIds: store
        .activeGrants()
        .filter((g) => g.mode === 'read')
        .map((g) => g.id),
      lockedAt: Date.UTC(2026, 0, 1),
      lockExpiresAt: Date.UTC(2026, 0, 1) + 600_000,
    });
    store.revokeGrants([write.id]);
    expect(store.checkoutLocks.due().map((l) => [l.id, l.state, l.end])).toEqual([
      [lock.id, 'releasing', 'revoked'],
    ]);
    expect(store.checkoutLocks.byToken(readOnly.token)?.state).toBe('held');
  });

  it('a grant past its expiry, even before the sweep marked it expired (the broker was down)', () => {
    const { store, clock } = memoryStore();
    const { lock } = withCheckout(store, clock.now());
    const longLock = store.checkoutLocks.add({
      ...lock,
      token: `${TOKEN}-long`,
      lockExpiresAt: clock.now() + 2 * DAY,
    });
    clock.advance(DAY);
    expect(store.unendedGrants().length).toBeGreaterThan(0);
    const due = store.checkoutLocks.due();
    expect(due.find((l) => l.id === longLock.id)).toMatchObject({
      state: 'releasing',
      end: 'expired',
    });
  });

  it('its own LOCK timing out, while its grants still stand', () => {
    const { store, clock } = memoryStore();
    const { lock } = withCheckout(store, clock.now());
    expect(store.checkoutLocks.due()).toEqual([]);
    clock.advance(600_000);
    expect(store.checkoutLocks.due().map((l) => [l.id, l.end])).toEqual([[lock.id, 'timed_out']]);
  });

  it('releaseForGrants marks only the held locks of those grants', () => {
    const { store, write, lock } = withCheckout();
    expect(store.checkoutLocks.releaseForGrants([write.id + 100], 'revoked')).toEqual([]);
    expect(store.checkoutLocks.releaseForGrants([write.id], 'expired')).toMatchObject([
      { id: lock.id, state: 'releasing', end: 'expired' },
    ]);
    // Once releasing, a second mark changes nothing.
    expect(store.checkoutLocks.releaseForGrants([write.id], 'revoked')).toEqual([]);
  });
});

describe('a release is retried until confirmed', () => {
  it('a failed attempt counts, says why and when the next is due; a confirmed one ends it', () => {
    const { store, clock } = memoryStore();
    const { write, lock } = withCheckout(store, clock.now());
    store.checkoutLocks.releaseForGrants([write.id], 'revoked');
    store.checkoutLocks.attemptFailed(lock.id, clock.now() + 5_000, 'Nextcloud unreachable');
    expect(store.checkoutLocks.due()).toEqual([]);
    expect(store.checkoutLocks.byToken(TOKEN)).toMatchObject({
      attempts: 1,
      lastError: 'Nextcloud unreachable',
      nextAttemptAt: clock.now() + 5_000,
    });
    clock.advance(5_000);
    expect(store.checkoutLocks.due().map((l) => l.id)).toEqual([lock.id]);
    store.checkoutLocks.released(lock.id, 'expired', true);
    expect(store.checkoutLocks.byToken(TOKEN)).toMatchObject({
      state: 'released',
      end: 'revoked',
      attempts: 2,
      releasedAt: clock.now(),
      nextAttemptAt: null,
    });
    expect(store.openCheckoutLocks()).toEqual([]);
    expect(store.checkoutLocks.due()).toEqual([]);
  });

  it('markReleasing with an error counts it as the first attempt', () => {
    const { store, lock } = withCheckout();
    store.checkoutLocks.markReleasing(lock.id, 'checkin', 'UNLOCK failed');
    expect(store.checkoutLocks.byToken(TOKEN)).toMatchObject({
      state: 'releasing',
      end: 'checkin',
      attempts: 1,
      lastError: 'UNLOCK failed',
    });
  });
});

describe('attack: rewriting the record of a checkout lock', () => {
  it('a released lock never comes back; what was locked, with which token, never changes; nothing is deleted', () => {
    const { store, lock } = withCheckout();
    const db = store.database.db;
    store.checkoutLocks.released(lock.id, 'checkin', false);
    expect(() =>
      db.prepare(`UPDATE checkout_locks SET state = 'held' WHERE id = ?`).run(lock.id),
    ).toThrow(/never back|never changes/);
    expect(() =>
      db.prepare(`UPDATE checkout_locks SET path = 'Other' WHERE id = ?`).run(lock.id),
    ).toThrow();
    expect(() => db.prepare('DELETE FROM checkout_locks').run()).toThrow(/never deleted/);
    expect(() => db.prepare('DELETE FROM checkout_lock_grants').run()).toThrow(/never deleted/);
    expect(() => db.prepare('UPDATE checkout_lock_grants SET grant_id = 99').run()).toThrow(
      /never rewritten/,
    );
  });

  it('a lock is recorded held, and its grants only as it is taken', () => {
    const { store, write, lock } = withCheckout();
    const db = store.database.db;
    expect(() =>
      db
        .prepare(
          `INSERT INTO checkout_locks (instance, path, token, token_sha256, locked_at, lock_expires_at, state, end_reason)
           VALUES ('personal', 'x', 't', ?, 1, 2, 'releasing', 'revoked')`,
        )
        .run('0'.repeat(64)),
    ).toThrow(/starts held/);
    store.checkoutLocks.markReleasing(lock.id, 'abandon');
    expect(() =>
      db
        .prepare('INSERT INTO checkout_lock_grants (lock_id, grant_id) VALUES (?, ?)')
        .run(lock.id, write.id + 1),
    ).toThrow(/recorded as it is taken/);
    expect(() =>
      db.prepare(`UPDATE checkout_locks SET end_reason = 'checkin' WHERE id = ?`).run(lock.id),
    ).toThrow(/never rewritten/);
  });

  it('a row that does not fit stops the broker rather than guess (a hand-edited database)', () => {
    const { store, lock } = withCheckout();
    const db = store.database.db;
    db.pragma('ignore_check_constraints = ON');
    db.prepare(`UPDATE checkout_locks SET attempts = -1 WHERE id = ?`).run(lock.id);
    expect(() => store.openCheckoutLocks()).toThrow(/damaged or was edited by hand/);
  });
});

describe('migration 4', () => {
  it('adds the checkout locks to a database from the previous broker, keeping its grants', () => {
    const { open, file } = fileStore(cleanups);
    writeOldDatabase(file, 3, 'write');
    const upgraded = open();
    expect(upgraded.grant(1)?.state).toBe('active');
    const lock = upgraded.checkoutLocks.add({
      instance: 'personal',
      path: 'Documents/a.txt',
      token: TOKEN,
      grantIds: [1],
      lockedAt: 10,
      lockExpiresAt: 10 + HOUR,
    });
    expect(lock).toMatchObject({ grantIds: [1], requestIds: [1], state: 'held' });
    const check = new Database(file, { readonly: true });
    cleanups.unshift(() => check.close());
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(5);
  });
});
