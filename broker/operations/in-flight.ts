/**
 * Operations in flight, by the grants that allowed them, so that revoking or expiring a
 * grant can abort what it is still allowing (a download or upload half-way through).
 */

/** The reason attached to an abort caused by a grant ending. */
export class GrantEndedError extends Error {
  override readonly name = 'GrantEndedError';
  readonly code = 'grant_ended' as const;
  constructor(readonly grantIds: readonly number[]) {
    super('the grant allowing this operation was revoked or expired');
  }
}

export interface InFlightHandle {
  readonly signal: AbortSignal;
  /** Unregisters; call when the operation has finished, whatever its outcome. */
  done(): void;
}

export class InFlight {
  readonly #byGrant = new Map<number, Set<AbortController>>();

  /** Registers an operation allowed by `grantIds` (empty for discovery: never aborted). */
  start(grantIds: readonly number[]): InFlightHandle {
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
    return {
      signal: controller.signal,
      done: () => {
        for (const id of ids) {
          const set = this.#byGrant.get(id);
          set?.delete(controller);
          if (set?.size === 0) this.#byGrant.delete(id);
        }
      },
    };
  }

  /** Aborts every operation relying on any of these grants; returns how many. */
  abortGrants(grantIds: readonly number[]): number {
    const hit = new Set<AbortController>();
    for (const id of grantIds) for (const c of this.#byGrant.get(id) ?? []) hit.add(c);
    for (const c of hit) c.abort(new GrantEndedError(grantIds));
    return hit.size;
  }

  /** Number of registered operations (for tests and shutdown logs). */
  get size(): number {
    const all = new Set<AbortController>();
    for (const set of this.#byGrant.values()) for (const c of set) all.add(c);
    return all.size;
  }
}
