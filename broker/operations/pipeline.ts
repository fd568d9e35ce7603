/**
 * The one pipeline every operation that touches Nextcloud goes through (docs/architecture.md):
 *
 *   wall.decide(op, activeGrants, policy, now)   refused ⇒ audit `refused`, refused envelope
 *   audit.append('intent')                        fails ⇒ refused, Nextcloud never touched
 *   re-check the grants                           revoked/expired meanwhile ⇒ refused
 *   step(client, canonical paths)                 the exact paths the wall returned
 *   audit.append('outcome', nc_request_ids)       ⇒ the verb's value, for a surface to word
 *
 * The Nextcloud clients live only in here: a step receives the client of the decided
 * instance and the wall's canonical paths, never the agent's spelling. The verbs in
 * operations/ are the only callers; the surfaces call the verbs and never see a client.
 * This is also the error boundary of every operation: Nextcloud errors map to vetted
 * envelopes, anything else becomes a generic error with a correlation id.
 *
 * Public: `check` (the wall alone), `refuse` (an audited refusal before the wall), `run`
 * and `runSystem`. Beside it: what the grants allow now (grant-view.ts), how a step's
 * failure is answered (step-failure.ts), the broker's own clean-up calls
 * (system-calls.ts), and the vocabulary of a step (step.ts).
 */
import type { AuditSink } from '../audit/sink.js';
import type { CallFields, IntentDetail, OutcomeDetail, RefusalFields } from '../audit/events.js';
import type { CallContext } from '../base/call.js';
import type { Clock } from '../base/domain.js';
import { internalError, refused, type Envelope, type EnvelopeCode } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { GrantEnding, WallDecision, WallOp } from '../wall.js';
import { AuditTrail, OutcomeAnswers } from './audit-trail.js';
import { decidedPathFields, pathFields } from './audit-fields.js';
import { GrantView } from './grant-view.js';
import { GrantEndedError, type InFlight } from './in-flight.js';
import type { GrantsPort, NextcloudPort } from './ports.js';
import type { Refusals } from './refusals.js';
import { envelopeForFailure } from './step-failure.js';
import {
  AUDIT_UNAVAILABLE,
  endOf,
  OperationRefusal,
  readOnly,
  type Allowed,
  type Checked,
  type Outcome,
  type RunOptions,
  type Step,
} from './step.js';
import { runSystemCall, type SystemTarget } from './system-calls.js';
import { endedMeanwhile, refusalFields, wallRefusal, type WallRefusal } from './wall-answers.js';

// The verbs' vocabulary, declared in step.ts, reached through the pipeline.
export { AUDIT_UNAVAILABLE, OperationRefusal } from './step.js';
export type { Allowed, Checked, Outcome, RunOptions, Step } from './step.js';

/** What a refused line says of the call besides where it came from and why. */
type RefusedTarget = Omit<RefusalFields, 'surface' | 'tool' | 'code' | 'correlation_id'>;

/** The fields every line of an allowed operation carries, the wall's paths among them. */
type DecidedFields = CallFields & ReturnType<typeof decidedPathFields> & { op: string };

export interface PipelineDeps {
  readonly grants: Pick<GrantsPort, 'grantSnapshot'>;
  readonly audit: AuditSink;
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

/** The wall allows the same paths again (a revoke or a rename of a grant did not change them). */
const sameTarget = (first: WallDecision & { ok: true }, again: WallDecision): boolean =>
  again.ok &&
  again.paths.length === first.paths.length &&
  again.paths.every((p, i) => p === first.paths[i]);

export class Pipeline {
  readonly #deps: PipelineDeps;
  readonly #trail: AuditTrail;
  readonly #grants: GrantView;

  constructor(deps: PipelineDeps) {
    this.#deps = deps;
    this.#trail = new AuditTrail(deps);
    this.#grants = new GrantView(deps);
  }

  /** The wall alone, for queries that touch nothing (check_access). */
  check(op: WallOp): Checked {
    const decision = this.#grants.decide(op);
    return decision.ok
      ? { ...decision, expiresAt: this.#grants.earliestExpiry(decision.grantIds) }
      : decision;
  }

  /** A refusal before the wall (bad arguments, a bad ticket): audited, then answered. */
  async refuse(
    ctx: CallContext,
    code: EnvelopeCode,
    message: string,
    fields: RefusedTarget = {},
    hint?: string,
  ): Promise<Envelope> {
    return this.#refused(ctx, fields, refused(code, message, hint === undefined ? {} : { hint }));
  }

  /** How the first of these grants that is not in force ended (undefined: all in force). */
  endingOf(grantIds: readonly number[]): GrantEnding | undefined {
    return this.#grants.endingOf(grantIds);
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

  /**
   * One operation: the wall, the intent line, the wall again, the step on the client of
   * the decided instance with the wall's canonical paths, the outcome line.
   */
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
    const decision = this.#grants.decide(op);
    if (!decision.ok) {
      const fields = { instance: op.instance, op: op.op, ...pathFields(op) };
      return { ok: false, envelope: await this.#refused(ctx, fields, wallRefusal(decision)) };
    }
    const bound = options.boundGrants ?? [];
    const relied = [...decision.grantIds, ...bound];
    if (!this.#grants.live(relied)) {
      return {
        ok: false,
        envelope: await this.#grantEnded(ctx, { ...base, ...pathFields(op) }, 'refused', relied),
      };
    }
    const decided: DecidedFields = { ...base, ...decidedPathFields(op, decision.paths) };
    const grants = [...new Set(relied)];
    if (!(await this.#intent(decided, grants, decision.discovery, options.intent))) {
      return {
        ok: false,
        envelope: refused('audit_unavailable', AUDIT_UNAVAILABLE, { retry: false }),
      };
    }
    // Security: revoke between check and use wins — look again right before the call.
    const again = this.#grants.decide(op);
    if (!sameTarget(decision, again) || !this.#grants.live(relied)) {
      const wall = again.ok ? undefined : again;
      return {
        ok: false,
        envelope: await this.#grantEnded(ctx, decided, 'outcome', relied, wall),
      };
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
    return this.#step(ctx, { op, decision, decided, relied, client }, step, options);
  }

  /** A broker-initiated clean-up call (system-calls.ts): past no wall, audited all the same. */
  runSystem<T>(
    ctx: CallContext,
    target: SystemTarget,
    step: (client: NextcloudPort) => Promise<T>,
    describe?: (value: T) => OutcomeDetail,
  ): Promise<Outcome<T>> {
    const { clients, logger, scrub } = this.#deps;
    return runSystemCall(
      { trail: this.#trail, clients, logger, scrub },
      ctx,
      target,
      step,
      describe,
    );
  }

  /**
   * The owner's own act on an instance (undo, operations/undo/): past no wall, since the
   * owner needs no grant. The caller writes its audit lines around it (its intent before:
   * nothing is sent without it). Every answer to the step's requests goes to `answers`,
   * as an operation's do. Security: only undo calls it, with paths its audited
   * operations' own lines name.
   */
  owner<T>(
    instance: string,
    answers: OutcomeAnswers,
    step: (client: NextcloudPort) => Promise<T>,
  ): Promise<T> {
    const client = this.#deps.clients.get(instance);
    if (client === undefined)
      return Promise.reject(new Error(`no Nextcloud client for instance '${instance}'`));
    return client.recording(answers.add, () => step(client));
  }

  /**
   * The intent line, written and fsynced before anything reaches Nextcloud.
   * Security: no line, no operation (false: the caller refuses).
   */
  async #intent(
    decided: DecidedFields,
    grants: number[],
    discovery: boolean,
    intent: IntentDetail | undefined,
  ): Promise<boolean> {
    try {
      await this.#trail.append({ event: 'intent', ...decided, grants, discovery, ...intent });
      return true;
    } catch (error) {
      const { surface, tool, instance, op, correlation_id } = decided;
      this.#deps.logger.error('audit intent failed; operation refused', {
        surface,
        tool,
        instance,
        op,
        correlation_id,
        error: errorDetail(error),
      });
      return false;
    }
  }

  /** The step, under an in-flight handle its grants' ends abort, then the outcome line. */
  async #step<T>(
    ctx: CallContext,
    call: {
      op: WallOp;
      decision: WallDecision & { ok: true };
      decided: DecidedFields;
      relied: readonly number[];
      client: NextcloudPort;
    },
    step: Step<T>,
    { describe, changesNothing = readOnly(call.op) }: RunOptions<T>,
  ): Promise<Outcome<T>> {
    const { op, decision, decided, relied, client } = call;
    // The intent above was durable before the step began; an outcome of a step that
    // changed nothing is answered once written (its fsync follows: writer.ts).
    const outcomeDurability = changesNothing ? 'written' : 'durable';
    // Security: the operation is stopped at the earliest expiry of every grant it relies
    // on (the ticket's too), not at the next sweep.
    const handle = this.#deps.inFlight.start(relied, this.#grants.earliestExpiry(relied));
    const allowed: Allowed = {
      instance: op.instance,
      paths: decision.paths,
      grantIds: decision.grantIds,
      discovery: decision.discovery,
      expiresAt: this.#grants.earliestExpiry(decision.grantIds),
      signal: handle.signal,
      recheck: () => {
        if (handle.signal.aborted) throw handle.signal.reason;
        if (sameTarget(decision, this.#grants.decide(op)) && this.#grants.live(relied)) return;
        const ending = this.#grants.endingOf(relied);
        throw new GrantEndedError(relied, ending ?? { state: 'revoked', at: this.#deps.now() });
      },
    };
    const answers = new OutcomeAnswers(); // Nextcloud's answers to the step's requests
    try {
      // A step that returned has completed on Nextcloud: report it as done even if a
      // revoke arrived in the meantime (an abort only stops what is still running).
      const value = await client.recording(answers.add, () => step(client, allowed));
      const warnings: string[] = [];
      const described = answers.outcome(describe?.(value) ?? {});
      if (
        !(await this.#trail.bestEffort(
          { event: 'outcome', ...decided, outcome: 'ok', ...described },
          outcomeDurability,
        ))
      ) {
        warnings.push('the operation ran, but its outcome could not be written to the audit log');
      }
      return { ok: true, value, warnings };
    } catch (error) {
      // A step's own refusal tells the precise story (e.g. "stored, but not verified");
      // otherwise an abort means the grant ended under the operation.
      const cause =
        error instanceof OperationRefusal || !handle.signal.aborted ? error : handle.signal.reason;
      const envelope = envelopeForFailure(this.#deps, ctx, cause);
      const ended = handle.signal.aborted
        ? endOf(handle.signal.reason)
        : error instanceof OperationRefusal
          ? error.ended
          : endOf(error);
      await this.#trail.bestEffort(
        {
          event: 'outcome',
          ...decided,
          outcome: envelope.status,
          code: envelope.code,
          reason: envelope.message,
          // Which way the grant ended under the operation (`revoked`, `expired`); the answers;
          // what the step changed before it failed (a trash's renamed item, say).
          ...answers.outcome({
            ...(ended === undefined ? {} : { cause: ended }),
            ...(error instanceof OperationRefusal ? error.audit : {}),
          }),
        },
        outcomeDurability,
      );
      return { ok: false, envelope };
    } finally {
      handle.done();
    }
  }

  /**
   * Audits a refusal (its code, reason and any ended grant's facts), then answers it.
   * Security: through the surface's refusal budget: past it, `rate_limited` (refusals.ts).
   */
  #refused(ctx: CallContext, fields: RefusedTarget, envelope: Envelope): Promise<Envelope> {
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
            this.#grants.endingOf(relied),
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
