import { describe, expect, it } from 'vitest';
import { GrantStoreError } from '../../broker/grants/index.js';
import { DAY, HOUR, T0, approveAll, memoryStore, twoItems } from './helpers.js';

describe('GrantStore requests', () => {
  it('records a pending request with numbered items', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    expect(r).toEqual({
      id: 1,
      instance: 'personal',
      reason: 'summarise the reports',
      state: 'pending',
      createdAt: T0,
      decidedAt: null,
      decidedBy: null,
      items: [
        { n: 1, kind: 'files', path: 'Documents/Reports', mode: 'read', grant: null },
        { n: 2, kind: 'files', path: 'Documents/Notes/todo.md', mode: 'write', grant: null },
      ],
    });
    expect(store.getRequest(1)).toEqual(r);
    expect(store.pendingRequests()).toEqual([r]);
  });

  it('numbers requests increasingly', () => {
    const { store } = memoryStore();
    const ids = [1, 2, 3].map(() => store.createRequest(twoItems).id);
    expect(ids).toEqual([1, 2, 3]);
  });

  it.each([
    [{ ...twoItems, items: [] }, /at least one item/],
    [{ ...twoItems, instance: '' }, /instance/],
    [{ ...twoItems, items: [{ path: '/Documents', mode: 'read' as const }] }, /canonical/],
    [{ ...twoItems, items: [{ path: 'a/../b', mode: 'read' as const }] }, /canonical/],
    [{ ...twoItems, items: [{ path: '', mode: 'read' as const }] }, /canonical/],
    [{ ...twoItems, items: [{ path: 'a', mode: 'admin' as 'read' }] }, /mode/],
    [{ ...twoItems, reason: 5 as unknown as string }, /reason/],
  ])('refuses a malformed request %#', (input, why) => {
    const { store } = memoryStore();
    expect(() => store.createRequest(input)).toThrow(GrantStoreError);
    expect(() => store.createRequest(input)).toThrow(why);
    expect(store.pendingRequests()).toEqual([]);
  });

  it('answers undefined for unknown or malformed ids', () => {
    const { store } = memoryStore();
    for (const id of [1, 0, -1, 1.5, NaN]) {
      expect(store.getRequest(id)).toBeUndefined();
      expect(store.grant(id)).toBeUndefined();
    }
  });

  it('expirePending marks requests at least the timeout old, and only those', () => {
    const { store, clock } = memoryStore();
    const old = store.createRequest(twoItems);
    clock.advance(HOUR);
    const young = store.createRequest(twoItems);
    clock.advance(11 * HOUR); // old is exactly 12 h old, young 11 h
    const expired = store.expirePending(12 * HOUR);
    expect(expired.map((r) => [r.id, r.state, r.decidedAt])).toEqual([
      [old.id, 'expired', T0 + 12 * HOUR],
    ]);
    expect(store.pendingRequests().map((r) => r.id)).toEqual([young.id]);
    expect(store.expirePending(12 * HOUR)).toEqual([]);
    expect(() => store.expirePending(0)).toThrow(/positive/);
  });

  it('discardAllPending discards every pending request and returns them', () => {
    const { store } = memoryStore();
    const a = store.createRequest(twoItems);
    const decided = store.createRequest(twoItems);
    store.decide(decided.id, { kind: 'deny', by: 'console' });
    const b = store.createRequest(twoItems);
    const gone = store.discardAllPending();
    expect(gone.map((r) => [r.id, r.state])).toEqual([
      [a.id, 'discarded'],
      [b.id, 'discarded'],
    ]);
    expect(store.getRequest(decided.id)?.state).toBe('denied');
    expect(store.discardAllPending()).toEqual([]);
  });
});

describe('GrantStore decisions', () => {
  it('approves every item: one grant per item, expiry from the approval time', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    clock.advance(5 * 60_000);
    const res = store.decide(r.id, approveAll);
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    const at = T0 + 5 * 60_000;
    expect(res.request.state).toBe('approved');
    expect(res.request.decidedAt).toBe(at);
    expect(res.request.decidedBy).toBe('@owner:example.org');
    expect(res.granted).toEqual([
      {
        id: 1,
        requestId: r.id,
        itemNo: 1,
        instance: 'personal',
        kind: 'files',
        path: 'Documents/Reports',
        mode: 'read',
        state: 'active',
        createdAt: at,
        expiresAt: at + DAY,
        endedAt: null,
      },
      {
        id: 2,
        requestId: r.id,
        itemNo: 2,
        instance: 'personal',
        kind: 'files',
        path: 'Documents/Notes/todo.md',
        mode: 'write',
        state: 'active',
        createdAt: at,
        expiresAt: at + DAY,
        endedAt: null,
      },
    ]);
    expect(res.request.items.map((i) => i.grant?.id)).toEqual([1, 2]);
    expect(store.activeGrants()).toEqual(res.granted);
    expect(store.grant(2)).toEqual(res.granted[1]);
  });

  it('approves a subset as partially_approved', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    const res = store.decide(r.id, { ...approveAll, items: [2, 2] });
    expect(res.ok && res.request.state).toBe('partially_approved');
    expect(res.ok && res.granted.map((g) => g.itemNo)).toEqual([2]);
    expect(res.ok && res.request.items.map((i) => i.grant === null)).toEqual([true, false]);
  });

  it('naming every item explicitly is a full approval', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    expect(store.decide(r.id, { ...approveAll, items: [2, 1] })).toMatchObject({
      ok: true,
      request: { state: 'approved' },
    });
  });

  it('denies: no grants', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    const res = store.decide(r.id, { kind: 'deny', by: 'console' });
    expect(res).toMatchObject({
      ok: true,
      request: { state: 'denied', decidedBy: 'console' },
      granted: [],
    });
    expect(store.activeGrants()).toEqual([]);
  });

  it.each([
    [{ ...approveAll, items: [3] }, 'bad_items'],
    [{ ...approveAll, items: [1, 3] }, 'bad_items'],
    [{ ...approveAll, items: [0] }, 'bad_items'],
    [{ ...approveAll, items: [1.5] }, 'bad_items'],
    [{ ...approveAll, items: [] }, 'bad_items'],
    [{ ...approveAll, durationMs: 8 * DAY }, 'expiry_above_max'],
    [{ ...approveAll, durationMs: 0 }, 'bad_duration'],
    [{ ...approveAll, durationMs: -DAY }, 'bad_duration'],
    [{ ...approveAll, durationMs: NaN }, 'bad_duration'],
    [{ ...approveAll, durationMs: Infinity }, 'bad_duration'],
    [{ ...approveAll, durationMs: 1.5 }, 'bad_duration'],
    [{ ...approveAll, maxMs: 0 }, 'bad_duration'],
  ])('refuses %j as %s, changing nothing', (d, code) => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    const res = store.decide(r.id, d);
    expect(res).toMatchObject({ ok: false, code });
    expect(!res.ok && res.message).toMatch(/\S/);
    expect(store.getRequest(r.id)).toEqual(r);
    expect(store.activeGrants()).toEqual([]);
    // The request can still be decided properly afterwards.
    expect(store.decide(r.id, approveAll).ok).toBe(true);
  });

  it('accepts a duration equal to the maximum', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    expect(store.decide(r.id, { ...approveAll, durationMs: 7 * DAY }).ok).toBe(true);
  });

  it('refuses an unknown request', () => {
    const { store } = memoryStore();
    expect(store.decide(7, approveAll)).toMatchObject({ ok: false, code: 'unknown_request' });
  });

  it('requires who decided', () => {
    const { store } = memoryStore();
    const r = store.createRequest(twoItems);
    expect(() => store.decide(r.id, { kind: 'deny', by: '' })).toThrow(GrantStoreError);
    expect(store.getRequest(r.id)?.state).toBe('pending');
  });
});

describe('GrantStore revocation and expiry', () => {
  function twoRequests() {
    const ctx = memoryStore();
    const a = ctx.store.createRequest(twoItems);
    const b = ctx.store.createRequest({ ...twoItems, instance: 'work' });
    ctx.store.decide(a.id, approveAll);
    ctx.store.decide(b.id, approveAll);
    return { ...ctx, a, b };
  }

  it('revokeRequest revokes that request’s grants and returns them', () => {
    const { store, clock, a } = twoRequests();
    clock.advance(HOUR);
    const revoked = store.revokeRequest(a.id);
    expect(revoked.map((g) => [g.id, g.state, g.endedAt])).toEqual([
      [1, 'revoked', T0 + HOUR],
      [2, 'revoked', T0 + HOUR],
    ]);
    expect(store.activeGrants().map((g) => g.id)).toEqual([3, 4]);
    expect(store.revokeRequest(a.id)).toEqual([]);
    expect(store.revokeRequest(99)).toEqual([]);
  });

  it('revokeInstance, revokeGrants, revokeAll return exactly what changed', () => {
    const { store } = twoRequests();
    expect(store.revokeInstance('work').map((g) => g.id)).toEqual([3, 4]);
    expect(store.revokeInstance('nope')).toEqual([]);
    expect(store.revokeGrants([2, 2, 3, 99, -1]).map((g) => g.id)).toEqual([2]);
    expect(store.revokeGrants([])).toEqual([]);
    expect(store.revokeAll().map((g) => g.id)).toEqual([1]);
    expect(store.revokeAll()).toEqual([]);
    expect(store.activeGrants()).toEqual([]);
  });

  it('expireGrants marks and returns grants at or past expiry, once', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, items: [1], durationMs: HOUR });
    const r2 = store.createRequest(twoItems);
    store.decide(r2.id, { ...approveAll, items: [1], durationMs: 2 * HOUR });
    clock.advance(HOUR);
    const expired = store.expireGrants();
    expect(expired.map((g) => [g.id, g.state, g.endedAt])).toEqual([[1, 'expired', T0 + HOUR]]);
    expect(store.expireGrants()).toEqual([]);
    expect(store.activeGrants().map((g) => g.id)).toEqual([2]);
  });

  it('revoke does not touch grants already past expiry (expiry reports those)', () => {
    const { store, clock } = memoryStore();
    const r = store.createRequest(twoItems);
    store.decide(r.id, { ...approveAll, durationMs: HOUR });
    clock.advance(HOUR);
    expect(store.revokeAll()).toEqual([]);
    expect(store.expireGrants()).toHaveLength(2);
  });
});
