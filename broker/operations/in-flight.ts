/**
 * Operations in flight, by the grants that allowed them, so that revoking or expiring a
 * grant can abort what it is still allowing (a download or upload half-way through, a
 * listing still on its way). Each operation also carries a timer for the earliest expiry
 * of its grants: it is stopped at that instant, not at the next sweep.
 */
import type { Clock } from '../base/domain.js';
import { CodedError } from '../base/coded-error.js';
import { MAX_TIMER_MS, type Timers } from './timers.js';

/** How the grants behind an abort ended: revoked (by the owner) or expired, and when. */
export interface GrantEnd {
  readonly state: 'revoked' | 'expired';
  /** ms since the epoch: the revoke's instant, or the expiry's. */
  readonly at: number;
}

/** The reason attached to an abort caused by a grant ending; the code is the envelope's. */
export class GrantEndedError extends CodedError<`grant_${GrantEnd['state']}`> {
  override readonly name = 'GrantEndedError';
  constructor(
    readonly grantIds: readonly number[],
    readonly end: GrantEnd,
  ) {
    super(
      `grant_${end.state}`,
      `the grant allowing this operation ${end.state === 'revoked' ? 'was revoked' : 'expired'}`,
    );
  }
}

export interface InFlightHandle {
  readonly signal: AbortSignal;
  /** Unregisters (and stops its expiry timer); call when the operation has finished. */
  done(): void;
}

export interface InFlightDeps {
  readonly now: Clock;
  readonly timers: Pick<Timers, 'setTimeout' | 'clearTimeout'>;
}

export class InFlight {
  readonly #byGrant = new Map<number, Set<AbortController>>();
  readonly #deps: InFlightDeps;

  constructor(deps: InFlightDeps) {
    this.#deps = deps;
  }

  /**
   * Registers an operation allowed by `grantIds` (empty for discovery: never aborted),
   * to be aborted at `expiresAt`, the earliest expiry of those grants (ms, broker clock).
   */
  start(grantIds: readonly number[], expiresAt?: number): InFlightHandle {
    const controller = new AbortController();
    const ids = [...new Set(grantIds)];
    for (const id of ids) {
      let set = this.#byGrant.get(id);
      if (set === undefined) {
        set = new Set();
        this.#byGrant.set(id, set);
      }
      set.add(controller);
    }
    const { now, timers } = this.#deps;
    let timer: unknown;
    // Security: an operation never outlives its grant, whatever it waits for; the timer
    // re-reads the broker's clock when it fires (a timer can run early against it).
    const arm = (at: number): void => {
      const left = at - now();
      if (left <= 0) {
        timer = undefined;
        controller.abort(new GrantEndedError(ids, { state: 'expired', at }));
        return;
      }
      timer = timers.setTimeout(() => arm(at), Math.min(left, MAX_TIMER_MS));
    };
    if (expiresAt !== undefined && ids.length > 0) arm(expiresAt);
    return {
      signal: controller.signal,
      done: () => {
        if (timer !== undefined) timers.clearTimeout(timer);
        timer = undefined;
        for (const id of ids) {
          const set = this.#byGrant.get(id);
          set?.delete(controller);
          if (set?.size === 0) this.#byGrant.delete(id);
        }
      },
    };
  }

  /** Aborts every operation relying on any of these grants, saying how they ended; returns how many. */
  abortGrants(grantIds: readonly number[], end: GrantEnd): number {
    const hit = new Set<AbortController>();
    for (const id of grantIds) {
      for (const c of this.#byGrant.get(id) ?? []) if (!c.signal.aborted) hit.add(c);
    }
    for (const c of hit) c.abort(new GrantEndedError(grantIds, end));
    return hit.size;
  }

  /** Number of registered operations (for tests and shutdown logs). */
  get size(): number {
    const all = new Set<AbortController>();
    for (const set of this.#byGrant.values()) for (const c of set) all.add(c);
    return all.size;
  }
}
