/**
 * Property: whatever the sequence of requests, decisions, revokes, sweeps, restarts and
 * clock movements (forwards or backwards), a grant is never active after it was revoked
 * or marked expired, never active at or after its expiry, and the store agrees with a
 * simple model of what should be active.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { GrantStore } from '../../broker/grants/index.js';
import type { GrantRecord } from '../../broker/base/domain.js';
import { HOUR, manualClock, tempDir } from './helpers.js';

type Op =
  | { op: 'create'; instance: 'a' | 'b'; items: number }
  | { op: 'approve'; req: number; items: number[] | undefined; hours: number }
  | { op: 'deny'; req: number }
  | { op: 'revokeRequest'; req: number }
  | { op: 'revokeInstance'; instance: 'a' | 'b' }
  | { op: 'revokeAll' }
  | { op: 'revokeGrants'; ids: number[] }
  | { op: 'expireGrants' }
  | { op: 'expirePending' }
  | { op: 'restart' }
  | { op: 'clock'; ms: number };

const req = fc.integer({ min: 1, max: 3 });
const instance = fc.constantFrom('a' as const, 'b' as const);

// Weighted so that requests get created, approved and reach their expiry instants often.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      instance,
      items: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('approve' as const),
      req,
      items: fc.option(fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }), {
        nil: undefined,
      }),
      hours: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 30 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deny' as const), req }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revokeRequest' as const), req }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revokeInstance' as const), instance }) },
  { weight: 1, arbitrary: fc.constant({ op: 'revokeAll' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('revokeGrants' as const),
      ids: fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'expireGrants' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'expirePending' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'restart' as const }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('clock' as const),
      // Mostly whole half-hours, so the clock often lands exactly on an expiry instant.
      ms: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: -2, max: 6 }).map((n) => (n * HOUR) / 2) },
        { weight: 1, arbitrary: fc.constantFrom(-1, 1) },
        { weight: 1, arbitrary: fc.integer({ min: -3 * HOUR, max: 13 * HOUR }) },
      ),
    }),
  },
);

interface ModelGrant {
  id: number;
  instance: string;
  requestId: number;
  expiresAt: number;
  ended: boolean;
}

const MAX_MS = 24 * HOUR;
const PENDING_MS = 2 * HOUR;

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let run = 0;

function check(ops: Op[]): void {
  const clock = manualClock();
  const file = `${tmp.dir}/p${run++}.sqlite`;
  const open = () => GrantStore.open(file, { now: clock.now, pendingTimeoutMs: PENDING_MS });
  let store = open();
  const grants = new Map<number, ModelGrant>();
  const requests = new Map<
    number,
    { instance: string; items: number; createdAt: number; decided: boolean }
  >();
  const endedIds = new Set<number>();
  const activeNow = () =>
    [...grants.values()].filter((g) => !g.ended && clock.now() < g.expiresAt).map((g) => g.id);
  const end = (changed: GrantRecord[], expected: number[], state: 'revoked' | 'expired') => {
    expect(changed.map((g) => g.id)).toEqual(expected);
    for (const g of changed) {
      expect(g.state).toBe(state);
      endedIds.add(g.id);
      const m = grants.get(g.id);
      if (m) m.ended = true;
    }
  };
  try {
    for (const o of ops) {
      const now = clock.now();
      switch (o.op) {
        case 'create': {
          const r = store.createRequest({
            instance: o.instance,
            reason: 'r',
            items: Array.from({ length: o.items }, (_, i) => ({
              path: `d/f${i}`,
              mode: 'read' as const,
            })),
          });
          requests.set(r.id, {
            instance: o.instance,
            items: o.items,
            createdAt: now,
            decided: false,
          });
          break;
        }
        case 'approve':
        case 'deny': {
          const d =
            o.op === 'deny'
              ? ({ kind: 'deny', by: 'o' } as const)
              : ({
                  kind: 'approve',
                  items: o.items,
                  durationMs: o.hours * HOUR,
                  maxMs: MAX_MS,
                  by: 'o',
                } as const);
          const res = store.decide(o.req, d);
          const m = requests.get(o.req);
          if (res.ok) {
            // Decided once: the model must have it pending and within its timeout.
            expect(m?.decided).toBe(false);
            expect(now - (m?.createdAt ?? 0)).toBeLessThan(PENDING_MS);
            if (m) m.decided = true;
            for (const g of res.granted) {
              expect(g.expiresAt).toBe(now + (o.op === 'approve' ? o.hours * HOUR : 0));
              expect(grants.has(g.id)).toBe(false);
              grants.set(g.id, {
                id: g.id,
                instance: g.instance,
                requestId: o.req,
                expiresAt: g.expiresAt,
                ended: false,
              });
            }
          } else if (m && !m.decided && now - m.createdAt >= PENDING_MS) {
            expect(res.code).toBe('expired');
            m.decided = true;
          } else if (m?.decided) {
            expect(['already_decided', 'expired']).toContain(res.code);
          }
          break;
        }
        case 'revokeRequest':
          end(
            store.revokeRequest(o.req),
            activeNow().filter((id) => grants.get(id)?.requestId === o.req),
            'revoked',
          );
          break;
        case 'revokeInstance':
          end(
            store.revokeInstance(o.instance),
            activeNow().filter((id) => grants.get(id)?.instance === o.instance),
            'revoked',
          );
          break;
        case 'revokeAll':
          end(store.revokeAll(), activeNow(), 'revoked');
          break;
        case 'revokeGrants':
          end(
            store.revokeGrants(o.ids),
            activeNow().filter((id) => o.ids.includes(id)),
            'revoked',
          );
          break;
        case 'expireGrants': {
          const due = [...grants.values()]
            .filter((g) => !g.ended && now >= g.expiresAt)
            .map((g) => g.id);
          end(store.expireGrants(), due, 'expired');
          break;
        }
        case 'expirePending': {
          const due = [...requests.entries()]
            .filter(([, m]) => !m.decided && now - m.createdAt >= PENDING_MS)
            .map(([id]) => id);
          expect(store.expirePending(PENDING_MS).map((r) => [r.id, r.state])).toEqual(
            due.map((id) => [id, 'expired']),
          );
          for (const id of due) (requests.get(id) ?? { decided: false }).decided = true;
          break;
        }
        case 'restart': {
          store.close();
          store = open();
          const pending = [...requests.entries()].filter(([, m]) => !m.decided).map(([id]) => id);
          expect(store.discardAllPending().map((r) => [r.id, r.state])).toEqual(
            pending.map((id) => [id, 'discarded']),
          );
          for (const id of pending) (requests.get(id) ?? { decided: false }).decided = true;
          break;
        }
        case 'clock':
          clock.advance(o.ms);
          break;
      }
      // The invariants, after every step.
      const active = store.activeGrants();
      for (const g of active) {
        expect(endedIds.has(g.id)).toBe(false); // never active after revoke / marked expiry
        expect(clock.now()).toBeLessThan(g.expiresAt); // never active at or after expiry
        expect(g.state).toBe('active');
      }
      expect(active.map((g) => g.id)).toEqual(activeNow());
    }
  } finally {
    store.close();
  }
}

describe('property: grant lifecycle under any sequence of operations', () => {
  it('a grant is never active after revoke, nor at or after its expiry', () => {
    fc.assert(fc.property(fc.array(opArb, { minLength: 5, maxLength: 60, size: 'max' }), check), {
      numRuns: 300,
    });
  });

  it('regression: approve, clock back before creation, expiry sweep, clock forward', () => {
    check([
      { op: 'create', instance: 'a', items: 2 },
      { op: 'approve', req: 1, items: undefined, hours: 1 },
      { op: 'clock', ms: 2 * HOUR },
      { op: 'expireGrants' },
      { op: 'clock', ms: -3 * HOUR },
      { op: 'revokeAll' },
      { op: 'clock', ms: 30 * HOUR },
      { op: 'expireGrants' },
    ]);
  });
});
