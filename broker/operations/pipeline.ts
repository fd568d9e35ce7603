/**
 * The one pipeline every operation that touches Nextcloud goes through (docs/architecture.md):
 *
 *   wall.decide(op, activeGrants, policy, now)   refused ⇒ audit `refused`, refused envelope
 *   audit.append('intent')                        fails ⇒ refused, Nextcloud never touched
 *   re-check the grants                           revoked/expired meanwhile ⇒ refused
 *   step(client, canonical paths)                 the exact paths the wall returned
 *   audit.append('outcome')                       ⇒ the verb's value, for a surface to word
 *
 * The Nextcloud clients live only in here: a step receives the client of the decided
 * instance and the wall's canonical paths, never the agent's spelling. The verbs in
 * operations/ are the only callers; the surfaces call the verbs and never see a client.
 * This is also the error boundary of every operation: Nextcloud errors map to vetted
 * envelopes, anything else becomes a generic error with a correlation id.
 *
 * Public: `check` (the wall alone), `refuse` (an audited refusal before the wall), `run`
 * and `runSystem`. Everything else is the pipeline's own.
 */
import type { CallContext } from '../base/call.js';
import type { Clock } from '../base/domain.js';
import { internalError, refused, type Envelope, type EnvelopeCode } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { scrubDeep } from '../base/scrub.js';
import { decide, type GrantEnding, type WallDecision, type WallOp } from '../wall.js';
import type { CallFields } from '../audit/events.js';
import { AuditTrail } from './audit-trail.js';
import { decidedPathFields, pathFields } from './audit-fields.js';
import { earliestExpiry, grantsLive } from './grant-checks.js';
import {
  AUDIT_UNAVAILABLE,
  endOf,
  OperationRefusal,
  type Allowed,
  type Checked,
  type Outcome,
  type RunOptions,
  type Step,
} from './step.js';
import {
  cutRefusal,
  endedMeanwhile,
  endingOfGrants,
  refusalFields,
  wallRefusal,
  type WallRefusal,
} from './wall-answers.js';
import { GrantEndedError, type InFlight } from './in-flight.js';
import { envelopeForNextcloudError, isNextcloudError } from './nextcloud-errors.js';
import type { AuditPort, GrantsPort, NextcloudPort } from './ports.js';
import type { Refusals } from './refusals.js';

// The verbs' vocabulary, declared in step.ts, reached through the pipeline.
export { AUDIT_UNAVAILABLE, OperationRefusal } from './step.js';
export type { Allowed, Checked, Outcome, RunOptions, Step } from './step.js';

export interface PipelineDeps {
  readonly grants: Pick<GrantsPort, 'grantSnapshot'>;
  readonly audit: AuditPort;
  /** Per-instance policy from the owner's config (a Map: agent input is the key). */
  readonly instances: ReadonlyMap<string, { readonly discovery: boolean }>;
  readonly clients: ReadonlyMap<string, NextcloudPort>;
  readonly inFlight: InFlight;
  /** Where every refusal is rate-limited and audited (repeats as counted summaries). */
  readonly refusals: Refusals;
  readonly logger: Logger;
  readonly scrub: (text: string) => string;
  readonly now: Clock;
}

export class Pipeline {
  readonly #deps: PipelineDeps;
  readonly #trail: AuditTrail;

  constructor(deps: PipelineDeps) {
    this.#deps = deps;
    this.#trail = new AuditTrail(deps);
  }

  /** The wall alone, for queries that touch nothing (check_access). */
  check(op: WallOp): Checked {
    const decision = this.#decide(op);
    return decision.ok
      ? { ...decision, expiresAt: this.#earliestExpiry(decision.grantIds) }
      : decision;
  }

  /** A refusal before the wall (bad arguments, a bad ticket): audited, then answered. */
  async refuse(
    ctx: CallContext,
    code: EnvelopeCode,
    message: string,
    fields: Record<string, unknown> = {},
    hint?: string,
  ): Promise<Envelope> {
    return this.#refused(ctx, fields, refused(code, message, hint === undefined ? {} : { hint }));
  }

  /** How the first of these grants that is not in force ended (undefined: all in force). */
  endingOf(grantIds: readonly number[]): GrantEnding | undefined {
    return endingOfGrants(grantIds, this.#deps.grants.grantSnapshot(), this.#deps.now());
  }

  /**
   * A refusal because a grant this call relied on (a ticket's) ended: named as the wall
   * names it, audited, nothing sent.
   */
  async refuseEnded(
    ctx: CallContext,
    target: { instance: string; path: string },
    ending: GrantEnding,
  ): Promise<Envelope> {
    const { instance, path } = target;
    return this.#refused(ctx, { instance, path }, endedMeanwhile(ending, instance, path));
  }

  async run<T>(
    ctx: CallContext,
    op: WallOp,
    step: Step<T>,
    options: RunOptions<T> = {},
  ): Promise<Outcome<T>> {
    const base = {
      surface: ctx.surface,
      tool: ctx.tool,
      instance: op.instance,
      op: op.op,
      correlation_id: ctx.correlationId,
    };
    const decision = this.#decide(op);
    if (!decision.ok) {
      const fields = { instance: op.instance, op: op.op, ...pathFields(op) };
      return { ok: false, envelope: await this.#refused(ctx, fields, wallRefusal(decision)) };
    }
    const bound = options.boundGrants ?? [];
    const relied = [...decision.grantIds, ...bound];
    if (!this.#grantsLive(relied)) {
      return {
        ok: false,
        envelope: await this.#grantEnded(ctx, { ...base, ...pathFields(op) }, 'refused', relied),
      };
    }
    const decided = { ...base, ...decidedPathFields(op, decision.paths) };
    try {
      // Security: written and fsynced before anything reaches Nextcloud; no line, no operation.
      await this.#trail.append({
        event: 'intent',
        ...decided,
        grants: [...new Set([...decision.grantIds, ...bound])],
        discovery: decision.discovery,
        ...options.intent,
      });
    } catch (error) {
      this.#deps.logger.error('audit intent failed; operation refused', {
        ...base,
        error: errorDetail(error),
      });
      return {
        ok: false,
        envelope: refused('audit_unavailable', AUDIT_UNAVAILABLE, { retry: false }),
      };
    }

    // Security: revoke between check and use wins — look again right before the call.
    const sameTarget = (again: WallDecision): boolean =>
      again.ok &&
      again.paths.length === decision.paths.length &&
      again.paths.every((p, i) => p === decision.paths[i]);
    const again = this.#decide(op);
    if (!sameTarget(again) || !this.#grantsLive(relied)) {
      const envelope = await this.#grantEnded(
        ctx,
        decided,
        'outcome',
        relied,
        again.ok ? undefined : again,
      );
      return { ok: false, envelope };
    }
    const client = this.#deps.clients.get(op.instance);
    if (client === undefined) {
      this.#deps.logger.error('no Nextcloud client for a configured instance', base);
      await this.#trail.bestEffort({
        event: 'outcome',
        ...decided,
        outcome: 'error',
        code: 'internal',
      });
      return { ok: false, envelope: internalError(ctx.correlationId) };
    }

    // Security: the operation is stopped at the earliest expiry of every grant it relies
    // on (the ticket's too), not at the next sweep.
    const handle = this.#deps.inFlight.start(relied, this.#earliestExpiry(relied));
    const allowed: Allowed = {
      instance: op.instance,
      paths: decision.paths,
      grantIds: decision.grantIds,
      discovery: decision.discovery,
      expiresAt: this.#earliestExpiry(decision.grantIds),
      signal: handle.signal,
      recheck: () => {
        if (handle.signal.aborted) throw handle.signal.reason;
        if (sameTarget(this.#decide(op)) && this.#grantsLive(relied)) return;
        const ending = this.endingOf(relied);
        throw new GrantEndedError(relied, ending ?? { state: 'revoked', at: this.#deps.now() });
      },
    };
    try {
      // A step that returned has completed on Nextcloud: report it as done even if a
      // revoke arrived in the meantime (an abort only stops what is still running).
      const value = await step(client, allowed);
      const warnings: string[] = [];
      const described = options.describe?.(value) ?? {};
      if (
        !(await this.#trail.bestEffort({
          event: 'outcome',
          ...decided,
          outcome: 'ok',
          ...described,
        }))
      ) {
        warnings.push('the operation ran, but its outcome could not be written to the audit log');
      }
      return { ok: true, value, warnings };
    } catch (error) {
      // A step's own refusal tells the precise story (e.g. "stored, but not verified");
      // otherwise an abort means the grant ended under the operation.
      const cause =
        error instanceof OperationRefusal || !handle.signal.aborted ? error : handle.signal.reason;
      const envelope = this.#envelopeFor(ctx, cause);
      const ended = handle.signal.aborted
        ? endOf(handle.signal.reason)
        : error instanceof OperationRefusal
          ? error.ended
          : endOf(error);
      await this.#trail.bestEffort({
        event: 'outcome',
        ...decided,
        outcome: envelope.status,
        code: envelope.code,
        reason: envelope.message,
        // Which way the grant ended under the operation: `revoked` or `expired`.
        ...(ended === undefined ? {} : { cause: ended }),
        // What the step changed before it failed (a trash's renamed item, say).
        ...(error instanceof OperationRefusal ? error.audit : {}),
      });
      return { ok: false, envelope };
    } finally {
      handle.done();
    }
  }

  /**
   * A broker-initiated clean-up call (releasing the lock of a checkout whose grant ended).
   * Security: it bypasses the wall because the grant is gone by design, and it only
   * ever narrows what is possible (an unlock); the path comes from the broker's own
   * checkout table, which the wall checked at checkout. It is still audited first:
   * without an intent line nothing is sent.
   */
  async runSystem<T>(
    ctx: CallContext,
    target: {
      instance: string;
      path: string;
      grantIds: readonly number[];
      reason: string;
      /** Extra fields for both lines (never content, never a secret). */
      fields?: Record<string, unknown>;
    },
    step: (client: NextcloudPort) => Promise<T>,
    describe?: (value: T) => Record<string, unknown>,
  ): Promise<Outcome<T>> {
    const fields = {
      surface: ctx.surface,
      tool: ctx.tool,
      instance: target.instance,
      path: target.path,
      grants: target.grantIds,
      reason: target.reason,
      ...target.fields,
      correlation_id: ctx.correlationId,
    };
    const client = this.#deps.clients.get(target.instance);
    if (client === undefined) return { ok: false, envelope: internalError(ctx.correlationId) };
    try {
      await this.#trail.append({ event: 'intent', ...fields });
    } catch (error) {
      this.#deps.logger.error('audit intent failed; clean-up not sent', {
        ...fields,
        error: errorDetail(error),
      });
      return {
        ok: false,
        envelope: refused('audit_unavailable', AUDIT_UNAVAILABLE, { retry: false }),
      };
    }
    try {
      const value = await step(client);
      const ok = await this.#trail.bestEffort({
        event: 'outcome',
        ...fields,
        outcome: 'ok',
        ...describe?.(value),
      });
      return { ok: true, value, warnings: ok ? [] : ['outcome not audited'] };
    } catch (error) {
      const envelope = this.#envelopeFor(ctx, error);
      await this.#trail.bestEffort({
        event: 'outcome',
        ...fields,
        outcome: envelope.status,
        code: envelope.code,
        reason: envelope.message,
      });
      return { ok: false, envelope };
    }
  }

  /**
   * Audits a refusal (its code, reason and any ended grant's facts), then answers it.
   * Security: through the surface's refusal budget: past it, `rate_limited` (refusals.ts).
   */
  #refused(
    ctx: CallContext,
    fields: Record<string, unknown>,
    envelope: Envelope,
  ): Promise<Envelope> {
    return this.#deps.refusals.answer(
      {
        ...refusalFields(envelope),
        correlation_id: ctx.correlationId,
        ...fields,
        surface: ctx.surface,
        tool: ctx.tool,
        code: envelope.code ?? 'refused',
      },
      envelope,
    );
  }

  #earliestExpiry(ids: readonly number[]): number | undefined {
    return earliestExpiry(this.#deps.grants.grantSnapshot().unended, ids, this.#deps.now());
  }

  #grantsLive(ids: readonly number[]): boolean {
    return grantsLive(this.#deps.grants.grantSnapshot().unended, ids, this.#deps.now());
  }

  #decide(op: WallOp): WallDecision {
    const { unended, ended } = this.#deps.grants.grantSnapshot();
    return decide(op, unended, this.#deps.instances.get(op.instance), this.#deps.now(), ended);
  }

  /**
   * Maps a step's failure to an envelope by its code (grant_revoked/_expired, Nextcloud's,
   * a step's own). Security: any other error stays in the log; the agent gets an id.
   */
  #envelopeFor(ctx: CallContext, error: unknown): Envelope {
    if (error instanceof GrantEndedError) return cutRefusal(error.grantIds, error.end);
    if (isNextcloudError(error)) return envelopeForNextcloudError(error, this.#deps.scrub);
    if (error instanceof OperationRefusal) return scrubDeep(error.envelope, this.#deps.scrub);
    this.#deps.logger.error('operation failed', {
      surface: ctx.surface,
      tool: ctx.tool,
      correlation_id: ctx.correlationId,
      error: errorDetail(error),
    });
    return internalError(ctx.correlationId);
  }

  /**
   * A grant this operation relied on ended after the wall allowed it: refused, named as
   * the wall names it (`grant_revoked` / `grant_expired`, with when).
   */
  async #grantEnded(
    ctx: CallContext,
    fields: CallFields,
    event: 'refused' | 'outcome',
    relied: readonly number[],
    wall?: WallRefusal,
  ): Promise<Envelope> {
    const envelope =
      wall !== undefined
        ? wallRefusal(wall)
        : endedMeanwhile(
            this.endingOf(relied),
            String(fields.instance),
            String(fields.path ?? fields.from ?? ''),
          );
    // A refusal before the intent line is a refused call like any other (#refused).
    if (event === 'refused') return this.#refused(ctx, fields, envelope);
    await this.#trail.bestEffort({
      event,
      ...fields,
      outcome: 'refused',
      ...refusalFields(envelope),
    });
    return envelope;
  }
}
