/**
 * One-shot timers that only a test fires (the audit anchor's interval and retries), so
 * "an hour later" takes no time and no test waits on a clock.
 */
import type { AnchorTimers } from '../broker/audit/anchor.js';

export interface ManualTimers extends AnchorTimers {
  /** The delays of the timers waiting now, in the order they were set. */
  pending(): number[];
  /**
   * Fires every timer waiting now whose delay is `ms` (all of them without `ms`);
   * timers they set wait for the next call. Returns how many fired.
   */
  fire(ms?: number): number;
}

export function manualTimers(): ManualTimers {
  let next = 1;
  const waiting = new Map<number, { fn: () => void; ms: number }>();
  return {
    setTimeout: (fn, ms) => {
      const id = next++;
      waiting.set(id, { fn, ms });
      return id;
    },
    clearTimeout: (handle) => {
      if (typeof handle === 'number') waiting.delete(handle);
    },
    pending: () => [...waiting.values()].map((t) => t.ms),
    fire: (ms) => {
      const due = [...waiting].filter(([, t]) => ms === undefined || t.ms === ms);
      for (const [id] of due) waiting.delete(id);
      for (const [, t] of due) t.fn();
      return due.length;
    },
  };
}
