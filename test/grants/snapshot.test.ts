/**
 * unendedGrants(): the frozen snapshot the wall decides on. A cache is only safe if it
 * can never show a grant that was revoked, on this connection or any other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GrantStore } from '../../broker/grants/index.js';
import { decide } from '../../broker/wall.js';
import { DAY, HOUR, manualClock, memoryStore, tempDir } from './helpers.js';

function approve(store: GrantStore, path: string): number {
  const r = store.createRequest({
    instance: 'personal',
    reason: 'r',
    items: [{ path, mode: 'read' }],
  });
  const d = store.decide(r.id, { kind: 'approve', durationMs: HOUR, maxMs: DAY, by: '@o:x' });
  if (!d.ok) throw new Error(d.message);
  return r.id;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** The daemon's connection and another one to the same database file, on one clock. */
function twoConnections() {
  const { file, cleanup } = tempDir();
  cleanups.push(cleanup);
  const clock = manualClock();
  const daemon = GrantStore.open(file, { now: clock.now });
  const other = GrantStore.open(file, { now: clock.now });
  cleanups.unshift(() => {
    daemon.close();
    other.close();
  });
  return { daemon, other, clock };
}

describe('stale snapshot attacks', () => {
  it('a revoke on the same connection is seen by the very next call', () => {
    const { store } = memoryStore();
    const id = approve(store, 'Docs');
    expect(store.unendedGrants().map((g) => g.path)).toEqual(['Docs']);
    store.revokeRequest(id);
    expect(store.unendedGrants()).toEqual([]);
  });

  it('a revoke committed by another connection is seen by the very next call', () => {
    const { daemon, other } = twoConnections();
    const id = approve(daemon, 'Docs');
    const before = daemon.unendedGrants();
    expect(before).toHaveLength(1);
    other.revokeRequest(id);
    expect(daemon.unendedGrants()).toEqual([]);
    approve(other, 'Photos');
    expect(daemon.unendedGrants().map((g) => g.path)).toEqual(['Photos']);
  });

  it('is frozen all the way down, so the wall may index it', () => {
    const { store } = memoryStore();
    approve(store, 'Docs');
    const snapshot = store.unendedGrants();
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(snapshot.every((g) => Object.isFrozen(g))).toBe(true);
    expect(store.unendedGrants()).toBe(snapshot);
  });

  it('holds expired-but-unmarked grants; the wall refuses them at the expiry instant', () => {
    const { store, clock } = memoryStore();
    approve(store, 'Docs');
    const op = { op: 'read', instance: 'personal', path: 'Docs/a' } as const;
    expect(decide(op, store.unendedGrants(), { discovery: false }, clock.now()).ok).toBe(true);
    clock.advance(HOUR);
    expect(store.unendedGrants()).toHaveLength(1);
    expect(decide(op, store.unendedGrants(), { discovery: false }, clock.now()).ok).toBe(false);
    expect(store.activeGrants()).toEqual([]);
  });
});

describe('the ended grants beside them (what the wall names after a revoke or expiry)', () => {
  it('a revoke moves the grant to ended at once, with its instant; never back', () => {
    const { store, clock } = memoryStore();
    const id = approve(store, 'Docs');
    expect(store.grantSnapshot().ended).toEqual([]);
    clock.advance(60_000);
    store.revokeRequest(id);
    const { unended, ended } = store.grantSnapshot();
    expect(unended).toEqual([]);
    expect(ended).toMatchObject([{ path: 'Docs', state: 'revoked', endedAt: clock.now() }]);
    expect(Object.isFrozen(ended) && ended.every((g) => Object.isFrozen(g))).toBe(true);
    expect(store.grantSnapshot()).toBe(store.grantSnapshot());
    const d = decide(
      { op: 'read', instance: 'personal', path: 'Docs/a' },
      unended,
      { discovery: false },
      clock.now(),
      ended,
    );
    expect(d).toMatchObject({ ok: false, code: 'grant_revoked' });
  });

  it('an expiry the sweep marked is ended as expired; one committed elsewhere is seen next call', () => {
    const { daemon, other, clock } = twoConnections();
    approve(daemon, 'Docs');
    expect(daemon.grantSnapshot().ended).toEqual([]);
    clock.advance(HOUR);
    other.expireGrants();
    expect(daemon.grantSnapshot().ended).toMatchObject([{ path: 'Docs', state: 'expired' }]);
    expect(daemon.unendedGrants()).toEqual([]);
  });
});
