/**
 * The request ids of Nextcloud answers that no operation's `outcome` records: a request
 * sent outside every recording scope (the client's `onAnswer`), an answer that came
 * after its operation's outcome was written (outcome-answers.ts), and a reconciliation
 * that found nothing new. They are written in batches, one `nc_requests` line per
 * instance (docs/contracts.md §4), so that no request of the broker's can look foreign
 * in Nextcloud's logs and none costs an fsync of its own on a hot path:
 *
 * - an answer that may name a file action (a request outside a reconciliation's idle
 *   paging) is written by the next sweep (within the sweep's 5 s), together with
 *   everything held;
 * - a quiet reconciliation's answers (`lazy`: OCS reads that name no file, and that
 *   admin_audit records as a login only) ride along with the next batch, or are written
 *   once a day, or once 500 are held, so that an idle broker does not add a line (and an
 *   audit anchor post) every interval;
 * - everything held is written at the stop, before its `stop` line.
 *
 * A batch that cannot be written stays held (at most MAX_HELD per instance, then they are
 * counted as `nc_requests_unlisted`) and is tried again at the next sweep.
 */
import type { Clock } from '../base/domain.js';
import type { AuditEvent } from '../audit/events.js';
import type { NextcloudAnswer } from '../nextcloud/client.js';
import { answerFields } from './outcome-answers.js';

/** Held per instance before more are only counted. */
export const MAX_HELD = 10_000;
/** Lazy answers held before they are written anyway. */
export const LAZY_BATCH = 500;
/** The longest a lazy answer waits. */
export const LAZY_WAIT_MS = 24 * 3_600_000;

interface Held {
  answers: NextcloudAnswer[];
  unlisted: number;
  /** Some answer held may name a file action: write at the next sweep. */
  eager: boolean;
  /** When the oldest answer held came. */
  since: number;
}

export interface StrayAnswersDeps {
  /** Appends the line; resolves false when it could not be written (kept for later). */
  readonly write: (event: AuditEvent) => Promise<boolean>;
  readonly now: Clock;
}

export class StrayAnswers {
  readonly #held = new Map<string, Held>();
  readonly #deps: StrayAnswersDeps;
  #flushing: Promise<void> = Promise.resolve();

  constructor(deps: StrayAnswersDeps) {
    this.#deps = deps;
  }

  /** Holds one answer of `instance`'s client; `lazy` for a quiet reconciliation's. */
  add(instance: string, answer: NextcloudAnswer, lazy = false): void {
    let held = this.#held.get(instance);
    if (held === undefined) {
      held = { answers: [], unlisted: 0, eager: false, since: this.#deps.now() };
      this.#held.set(instance, held);
    }
    if (held.answers.length < MAX_HELD) held.answers.push(answer);
    else held.unlisted += 1;
    if (!lazy) held.eager = true;
  }

  /** How many answers are held for `instance` (listed and counted). */
  heldFor(instance: string): number {
    const held = this.#held.get(instance);
    return held === undefined ? 0 : held.answers.length + held.unlisted;
  }

  /** Writes each instance's batch that is due (see the top of this file); the sweep calls it. */
  flushDue(): Promise<void> {
    return this.#flush((held) => this.#due(held));
  }

  /** Writes every batch held (at the stop). */
  flushAll(): Promise<void> {
    return this.#flush(() => true);
  }

  #due(held: Held): boolean {
    return (
      held.eager ||
      held.answers.length + held.unlisted >= LAZY_BATCH ||
      this.#deps.now() - held.since >= LAZY_WAIT_MS
    );
  }

  #flush(due: (held: Held) => boolean): Promise<void> {
    // One flush at a time: a batch is taken only once.
    this.#flushing = this.#flushing.then(async () => {
      for (const [instance, held] of [...this.#held]) {
        if (!due(held)) continue;
        this.#held.delete(instance);
        const written = await this.#deps.write({
          event: 'nc_requests',
          instance,
          source: 'broker',
          nc_request_ids: [],
          ...answerFields(held.answers, held.unlisted),
        });
        if (!written) this.#putBack(instance, held);
      }
    });
    return this.#flushing;
  }

  /** A batch that could not be written goes back in front of what came meanwhile. */
  #putBack(instance: string, held: Held): void {
    const since = this.#held.get(instance);
    if (since === undefined) {
      this.#held.set(instance, held);
      return;
    }
    const answers = [...held.answers, ...since.answers];
    const kept = answers.slice(0, MAX_HELD);
    this.#held.set(instance, {
      answers: kept,
      unlisted: held.unlisted + since.unlisted + answers.length - kept.length,
      eager: held.eager || since.eager,
      since: held.since,
    });
  }
}
