/**
 * How many refused calls each surface may make: a token bucket per surface (the agent's
 * MCP surface, the transfer surface with its blob endpoint), on the injected clock.
 *
 * Security: a refused call costs the agent nothing and the broker an fsynced audit line,
 * so a flood of them (about 300 a second wrote 1 MB/s) could fill the disk and take the
 * broker down. Each refusal spends a token; a surface with none left is answered
 * `rate_limited` with when a token will be back. Allowed calls never spend tokens and
 * are never limited: the budget bounds only what the wall (or the arguments) refused.
 */
import type { SurfaceName } from '../base/call.js';
import type { Clock } from '../base/domain.js';

export interface RefusalBudgetOptions {
  /** Refusals a surface may make at once. */
  readonly burst: number;
  /** Refusals a surface earns back each second. */
  readonly perSecond: number;
}

/** An honest agent rarely sees more than a few refusals in a row; a flood far more. */
export const DEFAULT_REFUSAL_BUDGET: RefusalBudgetOptions = { burst: 60, perSecond: 1 };

export type Spent = { ok: true } | { ok: false; retryAfterMs: number };

export class RefusalBudget {
  readonly #buckets = new Map<SurfaceName, { tokens: number; at: number }>();

  readonly #now: Clock;
  readonly #options: RefusalBudgetOptions = DEFAULT_REFUSAL_BUDGET;

  constructor(now: Clock, options: RefusalBudgetOptions = DEFAULT_REFUSAL_BUDGET) {
    this.#now = now;
    this.#options = options;
    if (!(options.burst >= 1 && options.perSecond > 0)) {
      throw new RangeError('a refusal budget needs burst >= 1 and perSecond > 0');
    }
  }

  /** Spends one refusal of `surface`, or says how long until one is back. */
  take(surface: SurfaceName): Spent {
    const { burst, perSecond } = this.#options;
    const now = this.#now();
    const bucket = this.#buckets.get(surface) ?? { tokens: burst, at: now };
    // A clock that steps back earns nothing (and takes nothing away).
    const earned = (Math.max(0, now - bucket.at) / 1000) * perSecond;
    bucket.tokens = Math.min(burst, bucket.tokens + earned);
    bucket.at = Math.max(bucket.at, now);
    this.#buckets.set(surface, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: ((1 - bucket.tokens) / perSecond) * 1000 };
  }
}
