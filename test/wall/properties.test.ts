/**
 * Property tests for the wall's invariants (fast-check). Paths are drawn from a
 * small alphabet so that grants and requests overlap often, mixed with hostile
 * pieces (traversal, look-alikes, invisibles, NFD, percent-escapes) and raw noise.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GrantView } from '../../broker/base/domain.js';
import {
  canonicalPath,
  covers,
  decide,
  type InstancePolicy,
  type WallOp,
} from '../../broker/wall.js';

const NOW = 1_700_000_000_000;
const RUNS = { numRuns: 2000 };

/** A handful of names, so that grants and requests overlap often. */
const simpleName = fc.constantFrom('a', 'b', 'Docs', '\u00e9');
const oddName = fc
  .array(fc.constantFrom('a', 'b', 'Do', 'cs', '\u00e9', 'e\u0301', '-', '.', ' ', '2'), {
    minLength: 1,
    maxLength: 3,
  })
  .map((parts) => parts.join(''));
const component = fc.oneof(
  { weight: 6, arbitrary: simpleName },
  { weight: 1, arbitrary: fc.constant('e\u0301') }, // NFD of a simple name
  { weight: 2, arbitrary: oddName },
);
/** Mostly valid paths, sometimes with a leading slash. */
const plausiblePath = fc
  .tuple(fc.boolean(), fc.array(component, { minLength: 1, maxLength: 3 }))
  .map(([slash, parts]) => `${slash ? '/' : ''}${parts.join('/')}`);
const hostilePiece = fc.constantFrom(
  '/',
  '//',
  '..',
  '.',
  '\\',
  '%2F',
  '%2e',
  '\u0000',
  '\n',
  '\u200b',
  '\u202e',
  '\ufeff',
  '\u2024',
  '\u2215',
  '\uff0f',
  '\ud800',
  'e\u0301',
  '\u212b',
  'trashbin',
  'OCS',
  '.htaccess',
  '.part',
  ' ',
  '\u00a0',
);
/** Arbitrary strings mixing hostile pieces, plausible names and raw code points. */
const hostilePath = fc
  .array(fc.oneof(hostilePiece, component, fc.string({ unit: 'binary', maxLength: 3 })), {
    maxLength: 8,
  })
  .map((parts) => parts.join(''));
const anyPath = fc.oneof(
  { weight: 4, arbitrary: plausiblePath },
  { weight: 1, arbitrary: hostilePath },
);
const anyInput = fc.oneof(anyPath, fc.anything());

/** Grant paths: mostly short canonical ones; sometimes slashed, NFD, odd or hostile. */
const grantPath = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.array(simpleName, { minLength: 1, maxLength: 2 }).map((p) => p.join('/')),
  },
  { weight: 1, arbitrary: plausiblePath },
  { weight: 1, arbitrary: hostilePath },
);
const instanceArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant('personal') },
  { weight: 1, arbitrary: fc.constant('work') },
);
const timeArb = fc.integer({ min: NOW - 2, max: NOW + 6 });
const grantsArb = fc
  .array(
    fc.record({
      instance: instanceArb,
      path: grantPath,
      mode: fc.constantFrom('read' as const, 'write' as const),
      expiresAt: timeArb,
    }),
    { minLength: 1, maxLength: 10 },
  )
  // Ids by position, so a decision's grantIds name exactly one grant each.
  .map((gs): GrantView[] => gs.map((g, i) => ({ ...g, id: i + 1, requestId: 1 })));

/**
 * A request path near the grants: a grant's own path, a descendant, a sibling that
 * only extends the name (`Docs2`, `Docs.bak`), or anything else.
 */
function nearPath(grants: readonly GrantView[]): fc.Arbitrary<string> {
  const granted = fc.constantFrom(...grants.map((g) => g.path));
  return fc.oneof(
    { weight: 2, arbitrary: anyPath },
    { weight: 1, arbitrary: granted },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          granted,
          fc.constantFrom('/a', '/b/Docs', '/e\u0301', '2', '.bak', '-old', ' x', '\u0301'),
        )
        .map(([g, suffix]) => g + suffix),
    },
    { weight: 1, arbitrary: granted.map((g) => `/${g}`) },
  );
}

function opArbFor(grants: readonly GrantView[]): fc.Arbitrary<WallOp> {
  const path = nearPath(grants);
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constantFrom('read' as const, 'write' as const, 'list' as const, 'search' as const),
        instance: instanceArb,
        path,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constantFrom('list' as const, 'search' as const),
        instance: instanceArb,
        path: fc.constantFrom('', '/'),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('move' as const),
        instance: instanceArb,
        from: path,
        to: path,
      }),
    },
  );
}

/** Grants and an operation on paths near them. */
const scenarioArb = grantsArb.chain((grants) => fc.tuple(fc.constant(grants), opArbFor(grants)));
const opArb = scenarioArb.map(([, op]) => op);
const policyArb = fc.constantFrom<InstancePolicy | undefined>(
  { discovery: false },
  { discovery: true },
  undefined,
);
const nowArb = fc.oneof(
  { weight: 9, arbitrary: timeArb },
  { weight: 1, arbitrary: fc.constant(Number.NaN) },
);

/** The Contract's matching rule, restated independently of broker/wall.ts. */
function contractAllows(
  g: GrantView,
  instance: string,
  path: string,
  needWrite: boolean,
  now: number,
): boolean {
  const canonical = canonicalPath(g.path);
  return (
    canonical.ok &&
    canonical.path === g.path &&
    g.instance === instance &&
    now < g.expiresAt &&
    (g.mode === 'write' || !needWrite) &&
    (path === g.path || path.startsWith(`${g.path}/`))
  );
}

function inputsOf(op: WallOp): unknown[] {
  return op.op === 'move' ? [op.from, op.to] : 'path' in op ? [op.path] : [];
}

describe('canonical form', () => {
  it('is a fixed point and idempotent, with no leading slash, in NFC, without empty components', () => {
    fc.assert(
      fc.property(anyInput, (input) => {
        const first = canonicalPath(input);
        if (!first.ok) return;
        expect(canonicalPath(first.path)).toEqual(first);
        expect(canonicalPath(`/${first.path}`)).toEqual(first);
        expect(first.path.startsWith('/')).toBe(false);
        expect(first.path).toBe(first.path.normalize('NFC'));
        expect(first.path.split('/')).not.toContain('');
      }),
      RUNS,
    );
  });

  it('gives NFC and NFD spellings the same answer', () => {
    fc.assert(
      fc.property(anyPath, (s) => {
        expect(canonicalPath(s.normalize('NFD'))).toEqual(canonicalPath(s.normalize('NFC')));
      }),
      RUNS,
    );
  });

  it('refused inputs never become allowed by adding a leading slash', () => {
    fc.assert(
      fc.property(anyPath, policyArb, grantsArb, (s, policy, grants) => {
        const plain = canonicalPath(s);
        const slashed = canonicalPath(`/${s}`);
        if (!plain.ok) expect(slashed.ok).toBe(false);
        if (!s.startsWith('/')) {
          expect(slashed.ok).toBe(plain.ok);
          if (plain.ok) expect(slashed).toEqual(plain);
        }
        for (const op of ['read', 'write', 'list', 'search'] as const) {
          const a = decide({ op, instance: 'personal', path: s }, grants, policy, NOW);
          const b = decide({ op, instance: 'personal', path: `/${s}` }, grants, policy, NOW);
          if (!a.ok && s !== '') expect(b.ok).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('every refusal reason is one printable line', () => {
    fc.assert(
      fc.property(anyInput, (input) => {
        const r = canonicalPath(input);
        if (!r.ok) expect(r.reason).toMatch(/^[\p{L}\p{N}\p{P}\p{S} ]+$/u);
      }),
      RUNS,
    );
  });
});

describe('decisions', () => {
  it('no allowed decision for a path outside every grant (and discovery only lists and searches)', () => {
    let allowedCount = 0;
    fc.assert(
      fc.property(scenarioArb, policyArb, nowArb, ([grants, op], policy, now) => {
        const d = decide(op, grants, policy, now);
        if (!d.ok) return;
        expect(policy).toBeDefined();
        expect(Number.isFinite(now)).toBe(true);
        if (!d.discovery) allowedCount += 1;
        if (d.discovery) {
          expect(['list', 'search']).toContain(op.op);
          expect(policy?.discovery).toBe(true);
          expect(d.grantIds).toEqual([]);
          return;
        }
        const inputs = inputsOf(op);
        expect(d.paths).toHaveLength(inputs.length);
        expect(d.grantIds).toHaveLength(inputs.length);
        inputs.forEach((input, i) => {
          const path = d.paths[i] as string;
          expect(canonicalPath(input)).toEqual({ ok: true, path });
          const g = grants[(d.grantIds[i] as number) - 1] as GrantView;
          expect(
            contractAllows(g, op.instance, path, op.op === 'write' || op.op === 'move', now),
          ).toBe(true);
        });
        if (op.op === 'move') expect(d.paths[0]).not.toBe(d.paths[1]);
      }),
      { numRuns: 5000 },
    );
    // The generators must actually reach grant-based decisions for this to mean anything.
    expect(allowedCount).toBeGreaterThan(200);
  });

  it('a covering, unexpired grant with enough mode always allows (no spurious refusals)', () => {
    let expectedAllowed = 0;
    fc.assert(
      fc.property(scenarioArb, nowArb, ([grants, op], now) => {
        const policy = { discovery: false };
        const needWrite = op.op === 'write' || op.op === 'move';
        const targets = inputsOf(op).map((x) => canonicalPath(x));
        const expectAllowed =
          Number.isFinite(now) &&
          targets.every((t) => t.ok) &&
          !(
            op.op === 'move' &&
            targets[0]?.ok &&
            targets[1]?.ok &&
            targets[0].path === targets[1].path
          ) &&
          targets.every(
            (t) =>
              t.ok && grants.some((g) => contractAllows(g, op.instance, t.path, needWrite, now)),
          );
        if ((op.op === 'list' || op.op === 'search') && (op.path === '' || op.path === '/')) return;
        if (expectAllowed) expectedAllowed += 1;
        expect(decide(op, grants, policy, now).ok).toBe(expectAllowed);
      }),
      { numRuns: 5000 },
    );
    expect(expectedAllowed).toBeGreaterThan(200);
  });

  it('a grant never covers a sibling whose name only extends it', () => {
    const suffix = fc
      .oneof(component, fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }))
      .filter((s) => s.length > 0 && !s.startsWith('/'));
    fc.assert(
      fc.property(plausiblePath, suffix, (raw, s) => {
        const p = canonicalPath(raw);
        if (!p.ok) return;
        expect(covers(p.path, p.path + s)).toBe(false);
        const g: GrantView = {
          id: 1,
          requestId: 1,
          instance: 'personal',
          path: p.path,
          mode: 'write',
          expiresAt: NOW + 1,
        };
        for (const op of ['read', 'write', 'list', 'search'] as const) {
          expect(
            decide({ op, instance: 'personal', path: p.path + s }, [g], { discovery: false }, NOW)
              .ok,
          ).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('grants of another instance never count', () => {
    fc.assert(
      fc.property(opArb, grantsArb, (op, grants) => {
        const foreign = grants.map((g) => ({ ...g, instance: `${g.instance}-other` }));
        const d = decide(op, foreign, { discovery: false }, NOW);
        expect(d.ok).toBe(false);
      }),
      RUNS,
    );
  });
});
