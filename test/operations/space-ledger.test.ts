/**
 * The space ledger (broker/operations/space-ledger.ts): the broker's own writes judged
 * together. Attack: several writes read the account's space at once, each sees the same
 * free space, and together they take it into Nextcloud's expiry zone (four 12 MiB pushes
 * at once on a 60 MB quota, where one by one only two would pass). Properties, on an
 * injected clock with a simulated server whose figures may lag:
 * - what is admitted at once is what one-by-one admission would allow, each in turn;
 * - whatever the interleaving of reads, admissions, commits, failures and settles, and
 *   however stale a reading (within the lag the ledger is told), no admitted write ever
 *   takes the server's true state into the zone;
 * - a settled reservation is forgotten only when no reading that may still be judged
 *   could miss it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_READING_AGE_MS, SpaceLedger } from '../../broker/operations/space-ledger.js';
import {
  applied,
  atWorst,
  spaceAfter,
  type SpaceChange,
  type SpaceFigures,
} from '../../broker/operations/space-rule.js';

const MiB = 1024 * 1024;

/** The guard's own judgement: the reading, plus what it does not reflect, at worst. */
const judge =
  (reading: SpaceFigures, change: SpaceChange) =>
  (pending: readonly SpaceChange[]): true | undefined => {
    const after = spaceAfter(pending.reduce(atWorst, reading), change);
    return after === null || after.short === 0 ? undefined : true;
  };

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const inZone = (s: SpaceFigures): boolean =>
  (spaceAfter(s, { kind: 'upload', bytes: 0 })?.short ?? 0) > 0;

describe('attack: four pushes read the same free space at once', () => {
  it('a 60 MB quota, the owner’s 10 MiB file and a keepsake in the trash bin: four 12 MiB pushes at once, two pass, as one by one', () => {
    const t = clock();
    const ledger = new SpaceLedger({ now: t.now });
    // Nextcloud's "60 MB" is 60 MiB.
    const reading: SpaceFigures = { quota: 60 * MiB, used: 0, trash: 10 * MiB + 2_000 };
    const push: SpaceChange = { kind: 'upload', bytes: 12 * MiB };
    // All four read before any committed: the same figures, the same time.
    const takenAt = t.now();
    const admitted = [1, 2, 3, 4].map(
      () => ledger.admit('i\u0000own', { takenAt, lagMs: 0 }, push, judge(reading, push)).ok,
    );
    // One by one, each reading after the last commit:
    let serial = reading;
    const oneByOne = [1, 2, 3, 4].map(() => {
      const ok = spaceAfter(serial, push)?.short === 0;
      if (ok) serial = applied(serial, push);
      return ok;
    });
    expect(oneByOne).toEqual([true, true, false, false]);
    expect(admitted).toEqual(oneByOne);
  });

  it('a reading taken before a write settled still counts it; one taken after does not', () => {
    const t = clock();
    const ledger = new SpaceLedger({ now: t.now });
    const change: SpaceChange = { kind: 'upload', bytes: 5 };
    const before = t.now();
    const admission = ledger.admit('a', { takenAt: before, lagMs: 0 }, change, () => undefined);
    if (!admission.ok) throw new Error('admitted');
    t.advance(10);
    admission.reservation.settle();
    expect(ledger.unreflected('a', { takenAt: before, lagMs: 0 })).toEqual([change]);
    // A tie counts the write (never under-counts).
    expect(ledger.unreflected('a', { takenAt: t.now(), lagMs: 0 })).toEqual([change]);
    expect(ledger.unreflected('a', { takenAt: t.now() + 1, lagMs: 0 })).toEqual([]);
    // Another account's reading never sees it.
    expect(ledger.unreflected('b', { takenAt: before, lagMs: 0 })).toEqual([]);
  });

  it('a figure that lags (a sharer’s, cached five minutes) counts the write for the whole lag', () => {
    const t = clock();
    const ledger = new SpaceLedger({ now: t.now });
    const lagMs = 330_000;
    const admission = ledger.admit(
      's',
      { takenAt: t.now(), lagMs },
      { kind: 'upload', bytes: 7 },
      () => undefined,
    );
    if (!admission.ok) throw new Error('admitted');
    admission.reservation.settle();
    const settledAt = t.now();
    t.advance(lagMs);
    expect(ledger.unreflected('s', { takenAt: settledAt + lagMs, lagMs })).toHaveLength(1);
    t.advance(1);
    expect(ledger.unreflected('s', { takenAt: settledAt + lagMs + 1, lagMs })).toHaveLength(0);
  });

  it('an early answer holds nothing; settling twice is settling once', () => {
    const t = clock();
    const ledger = new SpaceLedger({ now: t.now });
    const early = ledger.admit(
      'a',
      { takenAt: t.now(), lagMs: 0 },
      { kind: 'upload', bytes: 1 },
      () => undefined,
      false,
    );
    expect(early.ok).toBe(true);
    expect(ledger.held('a')).toBe(0);
    const held = ledger.admit(
      'a',
      { takenAt: t.now(), lagMs: 0 },
      { kind: 'upload', bytes: 1 },
      () => undefined,
    );
    if (!held.ok) throw new Error('admitted');
    held.reservation.settle();
    t.advance(5);
    held.reservation.settle();
    expect(ledger.unreflected('a', { takenAt: t.now(), lagMs: 0 })).toEqual([]);
  });

  it('a reading as old as the ledger’s memory is never judged', () => {
    const t = clock();
    const ledger = new SpaceLedger({ now: t.now });
    const takenAt = t.now();
    t.advance(MAX_READING_AGE_MS);
    expect(ledger.tooOld(takenAt)).toBe(true);
    expect(() =>
      ledger.admit('a', { takenAt, lagMs: 0 }, { kind: 'upload', bytes: 1 }, () => undefined),
    ).toThrow(RangeError);
  });
});

const quota = fc.integer({ min: 100, max: 10_000 });
const account = quota.chain((q) =>
  fc.record({
    quota: fc.constant(q),
    used: fc.integer({ min: 0, max: q }),
    trash: fc.integer({ min: 0, max: q }),
  }),
);
const change = (max: number): fc.Arbitrary<SpaceChange> =>
  fc.record({
    kind: fc.constantFrom('upload' as const, 'trash' as const, 'trash_copy' as const),
    bytes: fc.integer({ min: 0, max }),
  });

describe('property: what is admitted at once, one-by-one admission would allow', () => {
  it('applied in turn to the reading, every admitted change passes the rule', () => {
    fc.assert(
      fc.property(account, fc.array(change(3_000), { maxLength: 12 }), (reading, changes) => {
        const t = clock();
        const ledger = new SpaceLedger({ now: t.now });
        const takenAt = t.now();
        const admitted = changes.filter(
          (c) =>
            // A trash moves only what the files hold.
            (c.kind !== 'trash' || c.bytes <= reading.used) &&
            ledger.admit('a', { takenAt, lagMs: 0 }, c, judge(reading, c)).ok,
        );
        let state: SpaceFigures = reading;
        for (const c of admitted) {
          expect(spaceAfter(state, c)?.short).toBe(0);
          state = applied(state, c);
        }
        // Concurrent uploads are admitted exactly as one by one (an upload is its worst).
        const uploads = changes.filter((c) => c.kind === 'upload');
        const fresh = new SpaceLedger({ now: t.now });
        const together = uploads.map(
          (c) => fresh.admit('a', { takenAt, lagMs: 0 }, c, judge(reading, c)).ok,
        );
        let serial: SpaceFigures = reading;
        const oneByOne = uploads.map((c) => {
          const ok = spaceAfter(serial, c)?.short === 0;
          if (ok) serial = applied(serial, c);
          return ok;
        });
        expect(together).toEqual(oneByOne);
      }),
    );
  });
});

/** One write's life in the simulation. */
type Op = { change: SpaceChange; fails: boolean };

describe('property: interleaved reads, commits and failures never take the server into the zone', () => {
  it('whatever the order, with readings as stale as the lag the ledger is told', () => {
    const lagMs = 2_000;
    const scenario = account.chain((start) =>
      fc.record({
        start: fc.constant(start),
        ops: fc.array(
          fc.record({ change: change(Math.floor(start.quota / 3)), fails: fc.boolean() }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        events: fc.array(
          fc.oneof(
            // Reads weigh more: writes in flight together are the attack.
            {
              weight: 3,
              arbitrary: fc.record({ kind: fc.constant('read' as const), op: fc.nat(7) }),
            },
            fc.record({ kind: fc.constant('commit' as const), op: fc.nat(7) }),
            fc.record({
              kind: fc.constant('tick' as const),
              ms: fc.integer({ min: 0, max: 800 }),
            }),
          ),
          { maxLength: 40 },
        ),
        staleness: fc.array(fc.integer({ min: 0, max: lagMs }), { minLength: 40, maxLength: 40 }),
      }),
    );
    fc.assert(
      fc.property(scenario, ({ start, ops, events, staleness }) => {
        // Only states out of the zone are worth guarding (the zone refuses everything).
        if (inZone(start)) return;
        const t = clock();
        const ledger = new SpaceLedger({ now: t.now });
        // The server's true state over time, to answer stale readings.
        let server: SpaceFigures = start;
        const history: { at: number; state: SpaceFigures }[] = [{ at: t.now(), state: server }];
        const reservation = new Map<number, { settle(): void }>();
        const done = new Set<number>();
        const stateAt = (at: number): SpaceFigures =>
          [...history].reverse().find((h) => h.at <= at)?.state ?? start;
        let n = 0;
        for (const event of events) {
          if (event.kind === 'tick') {
            t.advance(event.ms);
            continue;
          }
          const op = ops[event.op % ops.length] as Op;
          const id = event.op % ops.length;
          if (event.kind === 'read') {
            if (reservation.has(id) || done.has(id)) continue;
            // A reading begun now may show the server as it was up to `lag` ago.
            const takenAt = t.now();
            const seen = stateAt(takenAt - (staleness[n++ % staleness.length] ?? 0));
            if (op.change.kind === 'trash' && op.change.bytes > seen.used) continue;
            const admission = ledger.admit(
              'a',
              { takenAt, lagMs },
              op.change,
              judge(seen, op.change),
            );
            if (admission.ok) reservation.set(id, admission.reservation);
            else done.add(id);
            continue;
          }
          const held = reservation.get(id);
          if (held === undefined) continue;
          if (!op.fails && (op.change.kind !== 'trash' || op.change.bytes <= server.used)) {
            server = applied(server, op.change);
            t.advance(1);
            history.push({ at: t.now(), state: server });
            // Security: the property itself.
            expect(inZone(server)).toBe(false);
            expect(spaceAfter(server, { kind: 'upload', bytes: 0 })?.short).toBe(0);
          }
          held.settle();
          reservation.delete(id);
          done.add(id);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('property: a reservation is forgotten only when no judged reading can miss it', () => {
  it('held until lag + the largest reading age have passed since it settled, then gone', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 600_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        (lagMs, openFor) => {
          const t = clock();
          const ledger = new SpaceLedger({ now: t.now });
          const a = ledger.admit(
            'x',
            { takenAt: t.now(), lagMs },
            { kind: 'upload', bytes: 1 },
            () => undefined,
          );
          if (!a.ok) throw new Error('admitted');
          t.advance(openFor);
          expect(ledger.held('x')).toBe(1);
          a.reservation.settle();
          const settledAt = t.now();
          t.advance(lagMs + MAX_READING_AGE_MS);
          expect(ledger.held('x')).toBe(1);
          // Any reading still young enough to judge began after settle + lag.
          const oldest = t.now() - MAX_READING_AGE_MS + 1;
          expect(oldest > settledAt + lagMs).toBe(true);
          t.advance(1);
          expect(ledger.held('x')).toBe(0);
        },
      ),
    );
  });
});
