/**
 * Frozen grant snapshots: decide() indexes a frozen list of frozen grants once and
 * then looks up only the path's ancestors. It must answer exactly as the scan does,
 * and must never index anything that can still change.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GrantView, Mode } from '../../broker/base/domain.js';
import { decide, type WallOp } from '../../broker/wall.js';

const NOW = 1_700_000_000_000;
const closed = { discovery: false } as const;

function grant(id: number, path: string, mode: Mode, extra: Partial<GrantView> = {}): GrantView {
  return { id, requestId: id, instance: 'personal', path, mode, expiresAt: NOW + 1000, ...extra };
}
function snapshot(grants: readonly GrantView[]): readonly GrantView[] {
  return Object.freeze(grants.map((g) => Object.freeze({ ...g })));
}
const read = (path: string, instance = 'personal'): WallOp => ({ op: 'read', instance, path });

describe('frozen snapshots answer exactly as the scan', () => {
  const name = fc.constantFrom('a', 'b', 'Docs', '\u00e9', 'e\u0301', 'a.b', ' x');
  const path = fc
    .tuple(fc.boolean(), fc.array(name, { minLength: 1, maxLength: 4 }))
    .map(([slash, parts]) => `${slash ? '/' : ''}${parts.join('/')}`);
  const grants = fc
    .array(
      fc.record({
        instance: fc.constantFrom('personal', 'work'),
        path,
        mode: fc.constantFrom('read' as const, 'write' as const),
        expiresAt: fc.integer({ min: NOW - 2, max: NOW + 3 }),
        id: fc.integer({ min: 1, max: 20 }),
      }),
      { maxLength: 12 },
    )
    .map((gs): GrantView[] => gs.map((g) => ({ ...g, requestId: 1 })));
  const op: fc.Arbitrary<WallOp> = fc.oneof(
    fc.record({
      op: fc.constantFrom('read' as const, 'write' as const, 'list' as const, 'search' as const),
      instance: fc.constantFrom('personal', 'work', 'other'),
      path,
    }),
    fc.record({
      op: fc.constant('move' as const),
      instance: fc.constant('personal'),
      from: path,
      to: path,
    }),
  );

  it('for every operation, grant list, policy and time', () => {
    fc.assert(
      fc.property(
        grants,
        fc.array(op, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.integer({ min: NOW - 3, max: NOW + 4 }),
        (gs, ops, discovery, now) => {
          const frozen = snapshot(gs);
          for (const o of ops) {
            // Asked twice: the second answer comes from the cached index.
            const scanned = decide(o, gs, { discovery }, now);
            expect(decide(o, frozen, { discovery }, now)).toEqual(scanned);
            expect(decide(o, frozen, { discovery }, now)).toEqual(scanned);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe('frozen snapshots never go stale', () => {
  it('a frozen list holding a mutable grant is scanned, so a change to that grant counts', () => {
    const mutable = { ...grant(1, 'Docs', 'read') };
    const list = Object.freeze([Object.freeze(grant(2, 'Other', 'read')), mutable]);
    expect(decide(read('Docs/x'), list, closed, NOW).ok).toBe(true);
    // Revocation by mutation (not how the store works, but it must not be cached away).
    mutable.path = 'Elsewhere';
    expect(decide(read('Docs/x'), list, closed, NOW).ok).toBe(false);
    mutable.path = 'Docs';
    mutable.expiresAt = NOW;
    expect(decide(read('Docs/x'), list, closed, NOW).ok).toBe(false);
  });

  it('a list that is not frozen is read afresh on every call', () => {
    const list = [grant(1, 'Docs', 'read')];
    expect(decide(read('Docs'), list, closed, NOW).ok).toBe(true);
    list.pop();
    expect(decide(read('Docs'), list, closed, NOW).ok).toBe(false);
    list.push(grant(2, 'Docs', 'read'));
    expect(decide(read('Docs'), list, closed, NOW)).toMatchObject({ ok: true, grantIds: [2] });
  });

  it('expiry is still checked against now on an indexed snapshot', () => {
    const list = snapshot([grant(1, 'Docs', 'write', { expiresAt: NOW })]);
    expect(decide(read('Docs/x'), list, closed, NOW - 1).ok).toBe(true);
    expect(decide(read('Docs/x'), list, closed, NOW).ok).toBe(false);
  });

  it('indexes hostile entries as the scan treats them: covering nothing', () => {
    const list = Object.freeze([
      null,
      Object.freeze({ ...grant(1, 'Docs', 'write'), instance: 7 }),
      Object.freeze({ ...grant(2, 'Docs', 'write'), path: ['Docs'] }),
      Object.freeze(grant(3, '/Docs', 'write')),
      Object.freeze(grant(4, 'Docs/', 'write')),
      Object.freeze(grant(5, 'Docs', 'write', { id: Number.NaN })),
    ]) as unknown as readonly GrantView[];
    for (const p of ['Docs', 'Docs/x']) expect(decide(read(p), list, closed, NOW).ok).toBe(false);
  });

  it('finds grants on every ancestor and picks the latest expiry, then the lowest id', () => {
    const list = snapshot([
      grant(9, 'A', 'read', { expiresAt: NOW + 5 }),
      grant(4, 'A/B', 'read', { expiresAt: NOW + 9 }),
      grant(3, 'A/B', 'read', { expiresAt: NOW + 9 }),
      grant(1, 'A/B/C/D', 'read', { expiresAt: NOW + 99 }),
      grant(2, 'A/BC', 'read', { expiresAt: NOW + 99 }),
    ]);
    expect(decide(read('A/B/C'), list, closed, NOW)).toMatchObject({ ok: true, grantIds: [3] });
    expect(decide(read('A/X'), list, closed, NOW)).toMatchObject({ ok: true, grantIds: [9] });
    expect(decide(read('A/B/C/D/E'), list, closed, NOW)).toMatchObject({ ok: true, grantIds: [1] });
    expect(decide(read('A/B', 'work'), list, closed, NOW).ok).toBe(false);
  });
});
