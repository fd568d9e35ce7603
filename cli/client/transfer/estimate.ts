/**
 * How long a transfer has left, from a rate smoothed over time rather than over the
 * last few chunks: bytes arrive in bursts (a burst of chunks within one millisecond
 * looks infinitely fast, a pause looks like a stall), so the rate is sampled at most
 * every `sampleMs` and folded into an exponentially weighted average whose weight
 * depends on the time passed (time constant `windowMs`). No estimate is given until
 * `warmupMs` have passed, so the first guess is not a wild one. Pure: the clock is given.
 */

export interface EstimateOptions {
  /** Time constant of the average: older rates weigh e^(-age/windowMs). */
  readonly windowMs: number;
  /** Shortest interval between two rate samples. */
  readonly sampleMs: number;
  /** No estimate before this much time has passed since the start. */
  readonly warmupMs: number;
}

export const ESTIMATE_DEFAULTS: EstimateOptions = {
  windowMs: 3_000,
  sampleMs: 250,
  warmupMs: 1_500,
};

export class RemainingTime {
  readonly #total: number;
  readonly #now: () => number;
  readonly #opts: EstimateOptions;
  readonly #startedAt: number;
  #sampledAt: number;
  #sampledBytes = 0;
  #done = 0;
  /** Bytes per millisecond, once there is a sample. */
  #rate: number | undefined;

  constructor(total: number, now: () => number, opts: EstimateOptions = ESTIMATE_DEFAULTS) {
    this.#total = total;
    this.#now = now;
    this.#opts = opts;
    this.#startedAt = now();
    this.#sampledAt = this.#startedAt;
  }

  /** Records that `done` bytes have moved so far (also with no new bytes: a stall counts). */
  update(done: number): void {
    this.#done = done;
    const at = this.#now();
    const elapsed = at - this.#sampledAt;
    if (elapsed < this.#opts.sampleMs) return;
    const rate = (done - this.#sampledBytes) / elapsed;
    const weight = 1 - Math.exp(-elapsed / this.#opts.windowMs);
    this.#rate = this.#rate === undefined ? rate : this.#rate + weight * (rate - this.#rate);
    this.#sampledAt = at;
    this.#sampledBytes = done;
  }

  /** Whole seconds left, or undefined while there is not enough to go on (or it stalls). */
  secondsLeft(): number | undefined {
    if (this.#done >= this.#total) return 0;
    if (this.#now() - this.#startedAt < this.#opts.warmupMs) return undefined;
    const rate = this.#rate;
    if (rate === undefined || rate <= 0) return undefined;
    return Math.ceil((this.#total - this.#done) / rate / 1_000);
  }
}

/** `42s`, `3m 05s`, `2h 07m`: short enough for the end of a progress line. */
export function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}
