/**
 * The wall after a grant ended: an ended grant never allows anything, and a refusal names
 * the grant that would have allowed the operation (`grant_revoked` / `grant_expired`, with
 * when) instead of answering `no_grant` as if nothing had ever been granted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EndedGrantView, GrantView, Mode } from '../../broker/base/domain.js';
import { canonicalPath, decide, type WallOp } from '../../broker/wall.js';
import { closed, grant, HOUR, list, move, NOW, open, read, refused, write } from './helpers.js';

const live = grant;
function revoked(path: string, mode: Mode, at: number, extra: Partial<EndedGrantView> = {}) {
  const g: EndedGrantView = { ...live(path, mode), state: 'revoked', endedAt: at, ...extra };
  return g;
}
function expired(path: string, mode: Mode, expiresAt: number, extra: Partial<EndedGrantView> = {}) {
  const g: EndedGrantView = {
    ...live(path, mode, { expiresAt }),
    state: 'expired',
    endedAt: expiresAt + 4_000,
    ...extra,
  };
  return g;
}

const at = (ms: number): string => new Date(ms).toISOString();

describe('a revoked grant never allows, and says so', () => {
  const docs = revoked('Docs', 'write', NOW - 60_000);

  it('answers grant_revoked for read, write, list and move, with when and by whom', () => {
    for (const op of [
      read('Docs/a.txt'),
      write('Docs/a.txt'),
      list('Docs'),
      move('Docs/a', 'Docs/b'),
    ]) {
      const d = refused(decide(op, [], closed, NOW, [docs]));
      expect(d.code).toBe('grant_revoked');
      expect(d.reason).toContain(`revoked by the owner at ${at(NOW - 60_000)}`);
      expect(d.reason).toContain(`#${docs.id}`);
      expect(d.ended).toEqual({
        grant: docs.id,
        request: docs.requestId,
        path: 'Docs',
        mode: 'write',
        state: 'revoked',
        at: NOW - 60_000,
      });
    }
  });

  it('names the path it covered when the operation was below the grant', () => {
    const d = refused(decide(read('Docs/sub/a.txt'), [], closed, NOW, [docs]));
    expect(d.reason).toContain('"personal:Docs"');
    expect(d.reason).toContain('covering "Docs/sub/a.txt"');
    expect(refused(decide(read('Docs'), [], closed, NOW, [docs])).reason).not.toContain('covering');
  });

  it('a revoked grant sharing an id with nothing live still allows nothing (frozen, indexed)', () => {
    const ended = Object.freeze([Object.freeze(docs)]);
    expect(decide(read('Docs'), Object.freeze([]), closed, NOW, ended).ok).toBe(false);
  });

  it('a revoke that ended in the future (a clock step back) still allows nothing', () => {
    const future = revoked('Docs', 'write', NOW + HOUR);
    expect(refused(decide(read('Docs'), [], closed, NOW, [future])).code).toBe('grant_revoked');
  });
});

describe('an expired grant never allows, and says when it expired', () => {
  it('an expired grant marked by the sweep answers grant_expired at its expiry, not the sweep', () => {
    const g = expired('Docs', 'read', NOW - HOUR);
    const d = refused(decide(read('Docs/a'), [], closed, NOW, [g]));
    expect(d.code).toBe('grant_expired');
    expect(d.reason).toContain(`expired at ${at(NOW - HOUR)}`);
    expect(d.reason).toContain('grants never renew');
    expect(d.ended?.at).toBe(NOW - HOUR);
  });

  it('a grant past its expiry that the sweep has not marked yet answers grant_expired too', () => {
    const g = live('Docs', 'read', { expiresAt: NOW - 5 });
    const d = refused(decide(read('Docs'), [g], closed, NOW));
    expect(d.code).toBe('grant_expired');
    expect(d.ended).toMatchObject({ grant: g.id, state: 'expired', at: NOW - 5 });
  });
});

describe('the most recent relevant ended grant is named', () => {
  it('the later ending wins, whether revoke or expiry', () => {
    const old = revoked('Docs', 'read', NOW - 3 * HOUR);
    const recent = expired('Docs/a', 'read', NOW - HOUR);
    expect(refused(decide(read('Docs/a/x'), [], closed, NOW, [old, recent])).ended?.grant).toBe(
      recent.id,
    );
    const newer = revoked('Docs', 'write', NOW - 60_000);
    const d = refused(decide(read('Docs/a/x'), [], closed, NOW, [old, recent, newer]));
    expect(d.code).toBe('grant_revoked');
    expect(d.ended?.grant).toBe(newer.id);
  });

  it('an unended grant past its expiry competes by its expiry', () => {
    const stale = live('Docs', 'read', { expiresAt: NOW - 10 });
    const older = revoked('Docs', 'read', NOW - 20);
    expect(refused(decide(read('Docs'), [stale], closed, NOW, [older])).code).toBe('grant_expired');
    const later = revoked('Docs', 'read', NOW - 1);
    expect(refused(decide(read('Docs'), [stale], closed, NOW, [older, later])).ended?.grant).toBe(
      later.id,
    );
  });

  it('on the same instant the higher grant id wins (deterministic)', () => {
    const a = revoked('Docs', 'read', NOW - 10);
    const b = expired('Docs', 'read', NOW - 10);
    expect(refused(decide(read('Docs'), [], closed, NOW, [a, b])).ended?.grant).toBe(b.id);
    expect(refused(decide(read('Docs'), [], closed, NOW, [b, a])).ended?.grant).toBe(b.id);
  });
});

describe('an ended grant that never covered the operation changes nothing (no_grant)', () => {
  it('a revoked grant on the sibling Docs2 never makes Docs say revoked', () => {
    const sibling = revoked('Docs2', 'write', NOW - 10);
    for (const op of [read('Docs'), read('Docs/a'), write('Docs'), list('Docs')]) {
      expect(refused(decide(op, [], closed, NOW, [sibling])).code).toBe('no_grant');
    }
    expect(
      refused(decide(read('Docs'), [], closed, NOW, [revoked('Docs/a', 'read', NOW - 1)])).code,
    ).toBe('no_grant');
  });

  it('a revoked read grant does not explain a refused write (it would not have allowed it)', () => {
    const r = revoked('Docs', 'read', NOW - 10);
    expect(refused(decide(write('Docs/a'), [], closed, NOW, [r])).code).toBe('no_grant');
    expect(refused(decide(move('Docs/a', 'Docs/b'), [], closed, NOW, [r])).code).toBe('no_grant');
  });

  it("another instance's ended grant does not count", () => {
    const other = revoked('Docs', 'write', NOW - 10, { instance: 'work' });
    expect(refused(decide(read('Docs'), [], closed, NOW, [other])).code).toBe('no_grant');
  });

  it('hostile ended grants name nothing: unknown state, no usable time, odd path or id', () => {
    const hostile = [
      revoked('Docs', 'write', NOW, { state: 'active' as unknown as 'revoked' }),
      revoked('Docs', 'write', Number.NaN),
      revoked('Docs', 'write', Number.POSITIVE_INFINITY),
      revoked('Docs', 'write', 9e15),
      revoked('Docs', 'write', '1' as unknown as number),
      expired('Docs', 'write', Number.NaN),
      revoked('/Docs', 'write', NOW),
      revoked(['Docs'] as unknown as string, 'write', NOW),
      revoked('Docs', 'write', NOW, { id: 1.5 }),
      revoked('Docs', 'admin' as Mode, NOW),
      null as unknown as EndedGrantView,
    ];
    for (const list of [hostile, Object.freeze(hostile)]) {
      const d = refused(decide(read('Docs'), [], closed, NOW, list));
      expect(d.code).toBe('no_grant');
      expect(d.ended).toBeUndefined();
    }
    const stale = live('Docs', 'read', { expiresAt: Number.NaN });
    expect(refused(decide(read('Docs'), [stale], closed, NOW)).code).toBe('no_grant');
  });
});

describe('what still holds beside an ended grant', () => {
  it('a live grant allows although an ended one covers the same path', () => {
    const g = live('Docs', 'write');
    const d = decide(read('Docs/a'), [g], closed, NOW, [revoked('Docs', 'write', NOW - 1)]);
    expect(d).toMatchObject({ ok: true, grantIds: [g.id] });
  });

  it('a move names the end that stops it: the source, else the destination', () => {
    const src = live('Src', 'write');
    const dst = revoked('Dst', 'write', NOW - 7);
    const d = refused(decide(move('Src/a', 'Dst/a'), [src], closed, NOW, [dst]));
    expect(d.code).toBe('grant_revoked');
    expect(d.ended?.grant).toBe(dst.id);
    const gone = expired('Src', 'write', NOW - 9);
    expect(refused(decide(move('Src/a', 'Dst/a'), [], closed, NOW, [gone, dst])).ended?.grant).toBe(
      gone.id,
    );
  });

  it('discovery still lists names after a revoke; the root still needs discovery', () => {
    const r = revoked('Docs', 'read', NOW - 1);
    expect(decide(list('Docs'), [], open, NOW, [r])).toMatchObject({ ok: true, discovery: true });
    expect(refused(decide(list(''), [], closed, NOW, [r])).code).toBe('no_grant');
    expect(refused(decide(read('Docs'), [], open, NOW, [r])).code).toBe('grant_revoked');
  });

  it('an unknown instance and a bad path are refused before any grant is looked at', () => {
    const r = revoked('Docs', 'read', NOW - 1);
    expect(refused(decide(read('Docs'), [], undefined, NOW, [r])).code).toBe('unknown_instance');
    expect(refused(decide(read('Docs/../x'), [], closed, NOW, [r])).code).toBe('invalid_path');
  });
});

// ---- properties --------------------------------------------------------------------

const name = fc.constantFrom('a', 'b', 'Docs', 'Docs2', '\u00e9');
const pathArb = fc.array(name, { minLength: 1, maxLength: 3 }).map((p) => p.join('/'));
const modeArb = fc.constantFrom<Mode>('read', 'write');
const timeArb = fc.integer({ min: NOW - 6, max: NOW + 6 });
const liveArb = fc.array(
  fc.record({
    instance: fc.constantFrom('personal', 'work'),
    path: pathArb,
    mode: modeArb,
    expiresAt: timeArb,
  }),
  { maxLength: 5 },
);
const endedArb = fc.array(
  fc.record({
    instance: fc.constantFrom('personal', 'work'),
    path: pathArb,
    mode: modeArb,
    expiresAt: timeArb,
    state: fc.constantFrom<'revoked' | 'expired'>('revoked', 'expired'),
    endedAt: timeArb,
  }),
  { maxLength: 5 },
);
/** Ids by position across both lists, so a named grant is unambiguous. */
const scenario = fc.tuple(liveArb, endedArb, fc.boolean()).map(([ls, es, frozen]) => {
  const grants: GrantView[] = ls.map((g, i) => ({ ...g, id: i + 1, requestId: 1 }));
  const ended: EndedGrantView[] = es.map((g, i) => ({ ...g, id: ls.length + i + 1, requestId: 2 }));
  return frozen
    ? {
        grants: Object.freeze(grants.map((g) => Object.freeze(g))),
        ended: Object.freeze(ended.map((g) => Object.freeze(g))),
      }
    : { grants, ended };
});
const opArb: fc.Arbitrary<WallOp> = fc.oneof(
  fc.record({
    op: fc.constantFrom('read' as const, 'write' as const, 'list' as const),
    instance: fc.constant('personal'),
    path: pathArb,
  }),
  fc.record({
    op: fc.constant('move' as const),
    instance: fc.constant('personal'),
    from: pathArb,
    to: pathArb,
  }),
);

/** The Contract's coverage rule, leaving time aside, restated independently of the wall. */
function wouldAllow(g: GrantView, path: string, needWrite: boolean): boolean {
  return (
    g.instance === 'personal' &&
    (g.mode === 'write' || !needWrite) &&
    (path === g.path || path.startsWith(`${g.path}/`))
  );
}

describe('properties of ended grants', () => {
  it('ended grants never change whether an operation is allowed, nor what allows it', () => {
    fc.assert(
      fc.property(scenario, opArb, timeArb, fc.boolean(), ({ grants, ended }, op, now, disc) => {
        const policy = { discovery: disc };
        const without = decide(op, grants, policy, now);
        const withEnded = decide(op, grants, policy, now, ended);
        expect(withEnded.ok).toBe(without.ok);
        if (without.ok) expect(withEnded).toEqual(without);
        // Only the explanation of an uncovered path may change; every other refusal stays.
        else if (!['no_grant', 'grant_expired'].includes(without.code))
          expect(withEnded).toEqual(without);
      }),
      { numRuns: 3000 },
    );
  });

  it('a refusal names the latest ending of a grant that would have allowed it, and no_grant means none did', () => {
    let named = 0;
    fc.assert(
      fc.property(scenario, opArb, timeArb, ({ grants, ended }, op, now) => {
        const d = decide(op, grants, closed, now, ended);
        if (d.ok || d.code === 'same_path') return;
        const needWrite = op.op === 'write' || op.op === 'move';
        const paths = (op.op === 'move' ? [op.from, op.to] : 'path' in op ? [op.path] : []).map(
          (p) => {
            const c = canonicalPath(p);
            return c.ok ? c.path : '';
          },
        );
        // The first path no live grant allows is the one the refusal is about.
        const stuck = paths.find(
          (p) => !grants.some((g) => wouldAllow(g, p, needWrite) && now < g.expiresAt),
        ) as string;
        const endings = [
          ...grants
            .filter((g) => wouldAllow(g, stuck, needWrite) && !(now < g.expiresAt))
            .map((g) => ({ id: g.id, state: 'expired', at: g.expiresAt })),
          ...ended
            .filter((g) => wouldAllow(g, stuck, needWrite))
            .map((g) => ({
              id: g.id,
              state: g.state,
              at: g.state === 'revoked' ? g.endedAt : g.expiresAt,
            })),
        ].sort((x, y) => y.at - x.at || y.id - x.id);
        const best = endings[0];
        if (best === undefined) {
          expect(d.code).toBe('no_grant');
          return;
        }
        named += 1;
        expect(d.code).toBe(best.state === 'revoked' ? 'grant_revoked' : 'grant_expired');
        expect(d.ended).toMatchObject({ grant: best.id, state: best.state, at: best.at });
        expect(d.reason).toContain(new Date(best.at).toISOString());
      }),
      { numRuns: 3000 },
    );
    expect(named).toBeGreaterThan(150);
  });
});
