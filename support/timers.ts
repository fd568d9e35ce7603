/**
 * Timers a test fires by hand (the daemon's `timers` option): nothing runs on its own.
 * Each one-shot timer records when it is due on `clock` (set it to the broker's clock),
 * so a test can check that an operation is armed for its grant's expiry instant.
 */
import type { Timers } from '../broker/operations/timers.js';

export interface ManualTimeout {
  readonly id: number;
  readonly ms: number;
  /** `clock()` when it was set, plus `ms`. */
  readonly at: number;
  readonly fn: () => void;
}

export class ManualTimers implements Timers {
  /** The clock `at` is measured on; set it to the broker's. */
  clock: () => number = Date.now;
  readonly #timeouts = new Map<number, ManualTimeout>();
  #next = 1;

  setInterval(): unknown {
    return 0;
  }

  clearInterval(): void {}

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timeouts.set(id, { id, ms, at: this.clock() + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timeouts.delete(handle as number);
  }

  /** The one-shot timers set and not yet fired or cleared. */
  pending(): ManualTimeout[] {
    return [...this.#timeouts.values()];
  }

  /** Fires one timer (as Node would once its time has come). */
  fire(timeout: ManualTimeout): void {
    if (!this.#timeouts.delete(timeout.id)) throw new Error(`timer ${timeout.id} is not pending`);
    timeout.fn();
  }
}
