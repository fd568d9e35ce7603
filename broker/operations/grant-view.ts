/**
 * What the grants allow now, as the pipeline asks it: the wall's decision on an
 * operation, whether the grants it relies on are still in force, until when, and how the
 * first that is not ended. Every answer reads the store's current frozen snapshot and
 * the clock at that moment: nothing here is cached between questions.
 */
import type { Clock } from '../base/domain.js';
import { decide, type GrantEnding, type WallDecision, type WallOp } from '../wall.js';
import { earliestExpiry, grantsLive } from './grant-checks.js';
import type { GrantsPort } from './ports.js';
import { endingOfGrants } from './wall-answers.js';

export interface GrantViewDeps {
  readonly grants: Pick<GrantsPort, 'grantSnapshot'>;
  /** Per-instance policy from the owner's config (a Map: agent input is the key). */
  readonly instances: ReadonlyMap<string, { readonly discovery: boolean }>;
  readonly now: Clock;
}

export class GrantView {
  readonly #deps: GrantViewDeps;

  constructor(deps: GrantViewDeps) {
    this.#deps = deps;
  }

  /** The wall's decision on `op` with the grants and the clock of this moment. */
  decide(op: WallOp): WallDecision {
    const { unended, ended } = this.#deps.grants.grantSnapshot();
    return decide(op, unended, this.#deps.instances.get(op.instance), this.#deps.now(), ended);
  }

  /** Every one of these grants is in force now. */
  live(ids: readonly number[]): boolean {
    return grantsLive(this.#deps.grants.grantSnapshot().unended, ids, this.#deps.now());
  }

  /** The earliest expiry among these grants (ms), undefined when none is in force. */
  earliestExpiry(ids: readonly number[]): number | undefined {
    return earliestExpiry(this.#deps.grants.grantSnapshot().unended, ids, this.#deps.now());
  }

  /** How the first of these grants that is not in force ended (undefined: all in force). */
  endingOf(ids: readonly number[]): GrantEnding | undefined {
    return endingOfGrants(ids, this.#deps.grants.grantSnapshot(), this.#deps.now());
  }
}
