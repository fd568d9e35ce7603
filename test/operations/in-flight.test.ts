/**
 * Attack: a download that started just before its grant expired ran on until the next
 * sweep. Each operation in flight now carries a timer for the earliest expiry of its
 * grants and is aborted at that instant, with a reason that says the grant expired
 * (in-flight.ts). Driven by hand-fired timers and a settable clock: no waiting.
 */
import { describe, expect, it } from 'vitest';
import { GrantEndedError, InFlight } from '../../broker/operations/in-flight.js';
import { MAX_TIMER_MS } from '../../broker/operations/timers.js';
import { ManualTimers } from '../../support/timers.js';

function rig(start = 1_000_000) {
  let now = start;
  const timers = new ManualTimers();
  timers.clock = () => now;
  const inFlight = new InFlight({ now: () => now, timers });
  return { timers, inFlight, set: (t: number) => (now = t), now: () => now };
}

describe('an operation is stopped at the expiry of its grants', () => {
  it('is armed for the earliest expiry, and aborted when that timer fires', () => {
    const { timers, inFlight, set } = rig();
    const op = inFlight.start([3, 4], 1_000_000 + 90_000);
    expect(timers.pending().map((t) => [t.ms, t.at])).toEqual([[90_000, 1_090_000]]);
    set(1_090_000);
    timers.fire(timers.pending()[0]!);
    expect(op.signal.aborted).toBe(true);
    const reason = op.signal.reason as GrantEndedError;
    expect(reason).toBeInstanceOf(GrantEndedError);
    expect(reason.end).toEqual({ state: 'expired', at: 1_090_000 });
    expect(reason.grantIds).toEqual([3, 4]);
    expect(reason.message).toContain('expired');
  });

  it('a timer that fires before the broker’s clock reached the expiry re-arms for the rest', () => {
    const { timers, inFlight, set } = rig();
    const op = inFlight.start([1], 1_000_000 + 10_000);
    set(1_000_000 + 9_950);
    timers.fire(timers.pending()[0]!);
    expect(op.signal.aborted).toBe(false);
    expect(timers.pending().map((t) => t.ms)).toEqual([50]);
    set(1_000_000 + 10_000);
    timers.fire(timers.pending()[0]!);
    expect(op.signal.aborted).toBe(true);
  });

  it('a grant far in the future is waited for in steps no timer refuses', () => {
    const { timers, inFlight } = rig();
    inFlight.start([1], 1_000_000 + 40 * 24 * 3_600_000);
    expect(timers.pending()[0]?.ms).toBe(MAX_TIMER_MS);
  });

  it('an operation that ends first clears its timer; discovery has none', () => {
    const { timers, inFlight } = rig();
    const op = inFlight.start([1], 1_000_000 + 5_000);
    op.done();
    expect(timers.pending()).toEqual([]);
    expect(op.signal.aborted).toBe(false);
    inFlight.start([], 1_000_000 + 5_000);
    inFlight.start([2]);
    expect(timers.pending()).toEqual([]);
    expect(inFlight.size).toBe(1);
  });

  it('a revoke says it was a revoke', () => {
    const { inFlight } = rig();
    const op = inFlight.start([7], 1_000_000 + 5_000);
    expect(inFlight.abortGrants([7], { state: 'revoked', at: 1_000_100 })).toBe(1);
    expect((op.signal.reason as GrantEndedError).end).toEqual({ state: 'revoked', at: 1_000_100 });
  });
});
