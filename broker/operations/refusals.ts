/**
 * Every refused call passes here on its way out: it is rate-limited per surface
 * (refusal-budget.ts) and recorded in the audit log, repeats as counted summaries
 * (refusal-ledger.ts). The pipeline's refusals, `request_access`'s own and the MCP
 * endpoint's (invalid arguments, a secret in the arguments) all come through `answer`.
 */
import type { SurfaceName } from '../base/call.js';
import type { Clock } from '../base/domain.js';
import type { AuditEvent } from '../audit/events.js';
import { failure, type Envelope } from '../base/envelope.js';
import { RefusalBudget, type RefusalBudgetOptions } from './refusal-budget.js';
import { RefusalLedger, type RefusalFields } from './refusal-ledger.js';

export interface RefusalsDeps {
  readonly now: Clock;
  /** Appends one audit line (scrubbed); false when it could not be written. */
  readonly write: (event: AuditEvent) => Promise<boolean>;
  readonly budget?: RefusalBudgetOptions;
  /** The summary window (default SUMMARY_WINDOW_MS). */
  readonly windowMs?: number;
}

/** A refused call's audit fields: where it came from and why (the code). */
export type Refusal = RefusalFields & { readonly surface: SurfaceName };

/** The answer to a call refused while its surface has no refusals left. */
export function rateLimited(surface: SurfaceName, retryAfterMs: number): Envelope {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return failure(
    'rate_limited',
    `too many refused calls on the ${surface} surface; this call was not run: call again in ${seconds} s`,
    true,
    {
      retry_after: seconds,
      hint: 'a call refused before will be refused again: fix it (request_access for a path you need, valid arguments) rather than repeating it',
    },
  );
}

export class Refusals {
  readonly #budget: RefusalBudget;
  readonly #ledger: RefusalLedger;

  constructor(deps: RefusalsDeps) {
    this.#budget = new RefusalBudget(deps.now, deps.budget);
    this.#ledger = new RefusalLedger({
      now: deps.now,
      write: deps.write,
      ...(deps.windowMs === undefined ? {} : { windowMs: deps.windowMs }),
    });
  }

  /**
   * Records a refused call and returns what to answer: `envelope`, or `rate_limited`
   * when the surface has spent its refusals.
   */
  async answer(refusal: Refusal, envelope: Envelope): Promise<Envelope> {
    const spent = this.#budget.take(refusal.surface);
    if (!spent.ok) {
      // Security: limited calls fold by surface, tool and the code they would have had,
      // whatever their paths, so varying the path buys no audit lines.
      await this.#ledger.note({
        surface: refusal.surface,
        tool: refusal.tool,
        code: 'rate_limited',
        refused_code: refusal.code,
        ...(refusal.correlation_id === undefined ? {} : { correlation_id: refusal.correlation_id }),
      });
      return rateLimited(refusal.surface, spent.retryAfterMs);
    }
    await this.#ledger.note(refusal);
    return envelope;
  }

  /** Writes the summaries whose window has closed (the lifecycle sweep). */
  flushDue(): Promise<void> {
    return this.#ledger.flush(false);
  }

  /** Writes every summary (at stop, before the `stop` record). */
  flushAll(): Promise<void> {
    return this.#ledger.flush(true);
  }

  /** Refused calls counted and not yet in a summary line. */
  get unwritten(): number {
    return this.#ledger.unwritten;
  }
}
