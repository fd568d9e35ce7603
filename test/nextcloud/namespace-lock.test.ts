/**
 * The per-instance serialisation of namespace changes (broker/nextcloud/namespace-lock.ts),
 * as a model: whatever mix of changes arrives, however long each takes, whichever fail
 * or are cancelled while they wait, no two ever run at once, they run in the order they
 * came, a cancelled one never runs, and one that fails or is cancelled holds up nobody.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NamespaceLock } from '../../broker/nextcloud/namespace-lock.js';
import { NextcloudError } from '../../broker/nextcloud/errors.js';

/** Lets `n` rounds of queued promise callbacks and timers run. */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

interface Change {
  /** How many rounds it takes. */
  readonly rounds: number;
  readonly fails: boolean;
  /** Cancelled (its grant ended) this many rounds after it was queued, if at all. */
  readonly cancelAfter: number | null;
}

const change: fc.Arbitrary<Change> = fc.record({
  rounds: fc.integer({ min: 0, max: 4 }),
  fails: fc.boolean(),
  cancelAfter: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
});

describe('namespace changes on one instance', () => {
  it('never overlap, run in arrival order, and a cancelled or failed one holds up nobody (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 12 }), async (changes) => {
        const lock = new NamespaceLock('personal');
        let running = 0;
        let overlapped = false;
        const started: number[] = [];
        const results = changes.map((c, i) => {
          const abort = new AbortController();
          if (c.cancelAfter !== null) void ticks(c.cancelAfter).then(() => abort.abort());
          return lock
            .run(async () => {
              started.push(i);
              running += 1;
              if (running > 1) overlapped = true;
              await ticks(c.rounds);
              running -= 1;
              if (c.fails) throw new Error(`change ${i} failed`);
              return i;
            }, abort.signal)
            .then(
              (): { ran: boolean; error?: unknown } => ({ ran: true }),
              (error: unknown) => ({ ran: started.includes(i), error }),
            );
        });
        const settled = await Promise.all(results);
        expect(overlapped).toBe(false);
        // Arrival order among those that ran.
        expect(started).toEqual([...started].sort((a, b) => a - b));
        for (const r of settled) {
          if (!r.ran) {
            // Only a cancellation keeps a change from running, and it says so.
            expect(r.error).toBeInstanceOf(NextcloudError);
            expect((r.error as NextcloudError).code).toBe('cancelled');
          }
        }
        // Every change that was never cancelled ran.
        changes.forEach((c, i) => {
          if (c.cancelAfter === null) expect(started).toContain(i);
        });
        expect(lock.busy).toEqual({ held: false, waiting: 0 });
      }),
      { numRuns: 200 },
    );
  });

  it('a change whose grant ended before its turn is refused without running', async () => {
    const lock = new NamespaceLock('personal');
    let release = (): void => undefined;
    const first = lock.run(() => new Promise<void>((resolve) => (release = resolve)));
    const abort = new AbortController();
    let ran = false;
    const second = lock.run(async () => {
      ran = true;
    }, abort.signal);
    await ticks(2);
    expect(lock.busy).toEqual({ held: true, waiting: 1 });
    abort.abort();
    await expect(second).rejects.toMatchObject({ code: 'cancelled' });
    const third = lock.run(() => Promise.resolve('third'));
    release();
    await first;
    await expect(third).resolves.toBe('third');
    expect(ran).toBe(false);
  });

  it('two instances do not wait for each other', async () => {
    const a = new NamespaceLock('a');
    const b = new NamespaceLock('b');
    let release = (): void => undefined;
    const held = a.run(() => new Promise<void>((resolve) => (release = resolve)));
    await expect(b.run(() => Promise.resolve('b ran'))).resolves.toBe('b ran');
    release();
    await held;
  });
});
