/**
 * Refused calls: rate-limited per surface and recorded as counted summaries
 * (broker/operations/refusals.ts). The daemon-level attack, through a real MCP client,
 * is test/operations/refusal-flood.test.ts; here the ledger's arithmetic is held by a
 * property: whatever the calls, clock, flushes and write failures, every refused call is
 * exactly one `refused` line or one unit of one `refused_summary` count.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refused } from '../../broker/base/envelope.js';
import { RefusalBudget } from '../../broker/operations/refusal-budget.js';
import { SUMMARY_WINDOW_MS } from '../../broker/operations/refusal-ledger.js';
import { Refusals, type Refusal } from '../../broker/operations/refusals.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

interface Line {
  event: string;
  fields: Record<string, unknown>;
}

/** A Refusals on a clock the test moves, writing into `lines` unless `failing`. */
function rig(budget = { burst: 60, perSecond: 1 }) {
  let t = T0;
  const lines: Line[] = [];
  const state = { failing: false };
  const refusals = new Refusals({
    now: () => t,
    budget,
    write: ({ event, ...fields }) => {
      if (state.failing) return Promise.resolve(false);
      lines.push({ event, fields });
      return Promise.resolve(true);
    },
  });
  return { refusals, lines, state, advance: (ms: number) => (t += ms) };
}

const noGrant = (path: string, surface: 'agent' | 'transfer' = 'agent'): Refusal => ({
  surface,
  tool: 'list',
  code: 'no_grant',
  instance: 'personal',
  path,
  correlation_id: `cid-${Math.random()}`,
});
const envelope = refused('no_grant', 'no grant');

/** What the lines account for: `refused` lines count one each, summaries their count. */
const accounted = (lines: readonly Line[]): number =>
  lines.reduce(
    (n, l) =>
      n + (l.event === 'refused' ? 1 : l.event === 'refused_summary' ? Number(l.fields.count) : 0),
    0,
  );

describe('attack: a flood of refused calls fills the disk', () => {
  it('one refusal repeated 10,000 times is one line and one summary per window', async () => {
    const r = rig({ burst: 100_000, perSecond: 1 });
    for (let n = 0; n < 10_000; n += 1) await r.refusals.answer(noGrant('Secret/a'), envelope);
    expect(r.lines).toHaveLength(1);
    r.advance(SUMMARY_WINDOW_MS);
    await r.refusals.flushDue();
    expect(r.lines).toHaveLength(2);
    expect(r.lines[1]).toMatchObject({
      event: 'refused_summary',
      fields: { surface: 'agent', tool: 'list', code: 'no_grant', path: 'Secret/a', count: 9999 },
    });
    expect(r.lines[1]?.fields).not.toHaveProperty('correlation_id');
  });

  it('past the budget a surface is answered rate_limited, whatever the paths, with when to retry', async () => {
    const r = rig({ burst: 60, perSecond: 1 });
    const answers = [];
    for (let n = 0; n < 300; n += 1) {
      answers.push(await r.refusals.answer(noGrant(`Secret/${n}`), envelope));
    }
    expect(answers.slice(0, 60).every((a) => a.code === 'no_grant')).toBe(true);
    for (const a of answers.slice(60)) {
      expect(a).toMatchObject({
        status: 'error',
        code: 'rate_limited',
        retry: true,
        retry_after: 1,
      });
    }
    // 60 own lines and one for the first limited call; the other 239 are counted.
    expect(r.lines).toHaveLength(61);
    await r.refusals.flushAll();
    expect(r.lines.at(-1)).toMatchObject({
      event: 'refused_summary',
      fields: { code: 'rate_limited', refused_code: 'no_grant', count: 239 },
    });
    expect(accounted(r.lines)).toBe(300);
    // The other surface has its own budget.
    expect(await r.refusals.answer(noGrant('x', 'transfer'), envelope)).toBe(envelope);
    // A token comes back each second.
    r.advance(1000);
    expect(await r.refusals.answer(noGrant('y'), envelope)).toBe(envelope);
  });

  it('retry_after says when the next refusal is allowed', () => {
    let t = T0;
    const budget = new RefusalBudget(() => t, { burst: 2, perSecond: 0.25 });
    expect(budget.take('agent')).toEqual({ ok: true });
    expect(budget.take('agent')).toEqual({ ok: true });
    expect(budget.take('agent')).toEqual({ ok: false, retryAfterMs: 4000 });
    t += 3000;
    expect(budget.take('agent')).toMatchObject({ ok: false });
    t += 1000;
    expect(budget.take('agent')).toEqual({ ok: true });
  });

  it('refusals that cannot be written while the disk is full are counted and written later', async () => {
    const r = rig({ burst: 100_000, perSecond: 1 });
    r.state.failing = true;
    for (let n = 0; n < 5; n += 1) await r.refusals.answer(noGrant(`P/${n % 2}`), envelope);
    r.advance(SUMMARY_WINDOW_MS);
    await r.refusals.flushDue();
    expect(r.lines).toHaveLength(0);
    expect(r.refusals.unwritten).toBe(5);
    r.state.failing = false;
    await r.refusals.flushDue();
    expect(accounted(r.lines)).toBe(5);
    expect(r.refusals.unwritten).toBe(0);
  });

  it('past MAX_OPEN_WINDOWS kinds, refusals are counted by surface, tool and code', async () => {
    const r = rig({ burst: 100_000, perSecond: 1 });
    r.state.failing = true; // nothing is written, so every kind stays held
    for (let n = 0; n < 1500; n += 1) await r.refusals.answer(noGrant(`P/${n}`), envelope);
    r.state.failing = false;
    await r.refusals.flushAll();
    expect(accounted(r.lines)).toBe(1500);
    expect(r.lines.length).toBeLessThanOrEqual(1001);
    expect(r.lines.at(-1)).toMatchObject({ fields: { varied: true, code: 'no_grant' } });
  });
});

describe('property: summary counts add up to the refused calls made', () => {
  const step = fc.oneof(
    fc.record({
      kind: fc.constant('call' as const),
      surface: fc.constantFrom('agent' as const, 'transfer' as const),
      tool: fc.constantFrom('list', 'read', 'move'),
      code: fc.constantFrom('no_grant', 'invalid_path', 'grant_expired'),
      path: fc.constantFrom('A', 'B', 'C/d', 'Ü'),
      concurrent: fc.integer({ min: 1, max: 4 }),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 90_000 }) }),
    fc.record({ kind: fc.constant('flush' as const) }),
    fc.record({ kind: fc.constant('disk' as const), full: fc.boolean() }),
  );

  it('every refused call is one refused line or one unit of one summary, per kind', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 120 }),
        fc.integer({ min: 1, max: 20 }),
        async (steps, burst) => {
          const r = rig({ burst, perSecond: 1 });
          const made = new Map<string, number>();
          const kindOf = (f: Record<string, unknown>): string =>
            f.code === 'rate_limited'
              ? `${String(f.surface)}|${String(f.tool)}|limited:${String(f.refused_code)}`
              : `${String(f.surface)}|${String(f.tool)}|${String(f.code)}|${String(f.path)}`;
          for (const s of steps) {
            if (s.kind === 'advance') r.advance(s.ms);
            else if (s.kind === 'flush') await r.refusals.flushDue();
            else if (s.kind === 'disk') r.state.failing = s.full;
            else {
              const calls = Array.from({ length: s.concurrent }, () =>
                r.refusals.answer(
                  { ...noGrant(s.path, s.surface), tool: s.tool, code: s.code },
                  refused('no_grant', 'x'),
                ),
              );
              for (const a of await Promise.all(calls)) {
                const f =
                  a.code === 'rate_limited'
                    ? {
                        surface: s.surface,
                        tool: s.tool,
                        code: 'rate_limited',
                        refused_code: s.code,
                      }
                    : { surface: s.surface, tool: s.tool, code: s.code, path: s.path };
                made.set(kindOf(f), (made.get(kindOf(f)) ?? 0) + 1);
              }
            }
          }
          r.state.failing = false;
          await r.refusals.flushAll();
          const seen = new Map<string, number>();
          for (const l of r.lines) {
            const n = l.event === 'refused' ? 1 : Number(l.fields.count);
            expect(n).toBeGreaterThan(0);
            seen.set(kindOf(l.fields), (seen.get(kindOf(l.fields)) ?? 0) + n);
          }
          expect(seen).toEqual(made);
          expect(r.refusals.unwritten).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
