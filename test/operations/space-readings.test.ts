/**
 * Space readings reused for a few seconds (broker/operations/space-readings.ts): a write's
 * ticket and its upload, or a run of pushes, read the account's space once. Attacks: a
 * write of the broker's own between the kept reading and the next judgement must still be
 * counted (the reading keeps its own time, which the ledger judges against), and a kept
 * reading must never refuse what a reading taken now would admit. A property: whatever
 * the sizes and the gaps between them, uploads judged on kept readings never take the
 * server into the zone. On an injected clock, against a server whose figures are true
 * when read.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Allowed } from '../../broker/operations/pipeline.js';
import type { NextcloudPort } from '../../broker/operations/ports.js';
import { SpaceGuard } from '../../broker/operations/space-guard.js';
import { REUSE_MS } from '../../broker/operations/space-readings.js';
import { spaceAfter } from '../../broker/operations/space-rule.js';

/** An account on a server that answers its true figures; counts each reading. */
function server(quota: number, used = 0, trash = 0) {
  const state = { quota, used, trash, reads: 0 };
  const port = {
    space: () => {
      state.reads += 1;
      return Promise.resolve({
        whose: 'own' as const,
        quota: state.quota,
        used: state.used,
        trash: state.trash,
      });
    },
  } as unknown as NextcloudPort;
  return { state, port };
}

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const allowed: Allowed = {
  instance: 'personal',
  paths: ['Docs/a.bin'],
  grantIds: [1],
  discovery: false,
  expiresAt: undefined,
  signal: new AbortController().signal,
  recheck: () => undefined,
};

const upload = (bytes: number) =>
  ({ kind: 'upload', path: 'Docs/a.bin', bytes, replaces: false }) as const;

/** Reserves, commits on the server, settles: one upload as the blob endpoint runs it. */
async function push(guard: SpaceGuard, s: ReturnType<typeof server>, bytes: number) {
  const held = await guard.reserve(s.port, allowed, upload(bytes));
  s.state.used += bytes;
  held.settle();
}

describe('a reading reused within REUSE_MS', () => {
  it('a ticket and its upload read the space once; after REUSE_MS it is read again', async () => {
    const t = clock();
    const s = server(1_000_000);
    const guard = new SpaceGuard({ now: t.now, retention: new Map() });
    await guard.check(s.port, allowed, upload(10));
    t.advance(REUSE_MS - 1);
    await push(guard, s, 10);
    expect(s.state.reads).toBe(1);
    t.advance(1);
    await guard.check(s.port, allowed, upload(10));
    expect(s.state.reads).toBe(2);
  });
});

describe('attack: writes between a kept reading and the next judgement', () => {
  it('a push of the broker’s own since the reading is counted: the next one is refused', async () => {
    const t = clock();
    // 100 kB quota, a tenth kept: 45 kB pushes, one fits, two do not.
    const s = server(100_000);
    const guard = new SpaceGuard({ now: t.now, retention: new Map() });
    await guard.check(s.port, allowed, upload(45_000));
    t.advance(100);
    await push(guard, s, 45_000);
    t.advance(100);
    // The kept reading shows none of the first push; the ledger counts it.
    await expect(guard.check(s.port, allowed, upload(45_000))).rejects.toMatchObject({
      envelope: { code: 'insufficient_space' },
    });
    expect(s.state.used).toBe(45_000);
  });

  it('a kept reading never refuses alone: the owner’s larger quota since is read, and admits', async () => {
    const t = clock();
    const s = server(100_000);
    const guard = new SpaceGuard({ now: t.now, retention: new Map() });
    await guard.check(s.port, allowed, upload(10));
    s.state.quota = 10_000_000;
    t.advance(100);
    await expect(guard.check(s.port, allowed, upload(500_000))).resolves.toBeUndefined();
    expect(s.state.reads).toBe(2);
  });
});

describe('attack: a reading Nextcloud answered after a write of the broker’s own committed', () => {
  it('does not count that write twice: two pushes that fit one by one both pass', async () => {
    const t = clock();
    // 100 kB quota, a tenth kept: two 30 kB pushes fit one by one; counted thrice, not.
    const s = server(100_000);
    const guard = new SpaceGuard({ now: t.now, retention: new Map() });
    const first = await guard.reserve(s.port, allowed, upload(30_000));
    t.advance(REUSE_MS);
    // The second write's reading is on its way when the first commits and settles:
    // Nextcloud's answer shows the first one's bytes, which the ledger still holds.
    const port = s.port as unknown as { space: (...args: unknown[]) => Promise<unknown> };
    const read = port.space;
    let raced = false;
    port.space = (...args) => {
      if (!raced) {
        raced = true;
        s.state.used += 30_000;
        first.settle();
        t.advance(5);
      }
      return read(...args);
    };
    const second = await guard.reserve(s.port, allowed, upload(30_000));
    s.state.used += 30_000;
    second.settle();
    // The reading that raced the commit, then one taken afresh, judged exactly.
    expect(s.state.reads).toBe(3);
    expect(s.state.used).toBe(60_000);
  });

  it('a refusal on a reading no write of the broker’s raced stands without reading again', async () => {
    const t = clock();
    const s = server(100_000, 80_000);
    const guard = new SpaceGuard({ now: t.now, retention: new Map() });
    await expect(guard.reserve(s.port, allowed, upload(30_000))).rejects.toMatchObject({
      envelope: { code: 'insufficient_space' },
    });
    expect(s.state.reads).toBe(1);
  });
});

describe('property: uploads judged on kept readings never take the server into the zone', () => {
  it('whatever the sizes and the gaps between them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000, max: 100_000 }),
        fc.array(
          fc.record({ bytes: fc.integer({ min: 0, max: 40_000 }), gap: fc.nat(REUSE_MS * 2) }),
          { maxLength: 15 },
        ),
        async (quota, uploads) => {
          const t = clock();
          const s = server(quota);
          const guard = new SpaceGuard({ now: t.now, retention: new Map() });
          for (const { bytes, gap } of uploads) {
            t.advance(gap);
            await push(guard, s, bytes).catch((error: unknown) => {
              if (
                (error as { envelope?: { code?: string } }).envelope?.code !== 'insufficient_space'
              )
                throw error;
            });
            const now = { quota, used: s.state.used, trash: s.state.trash };
            expect(spaceAfter(now, { kind: 'upload', bytes: 0 })?.short).toBe(0);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
