/**
 * The one pipeline every operation that touches Nextcloud goes through (DESIGN §2):
 *
 *   wall.decide(op, activeGrants, policy, now)   refused ⇒ audit `refused`, refused envelope
 *   audit.append('intent')                        fails ⇒ refused, Nextcloud never touched
 *   re-check the grants                           revoked/expired meanwhile ⇒ refused
 *   step(client, canonical paths)                 the exact paths the wall returned
 *   audit.append('outcome')                       ⇒ the caller renders the value
 *
 * The Nextcloud clients live only in here: a step receives the client of the decided
 * instance and the wall's canonical paths, never the agent's spelling. Tool handlers
 * call the verbs in operations/*.ts, which call `run`; they never import a client.
 * This is also the error boundary of every operation: Nextcloud errors map to vetted
 * envelopes, anything else becomes a generic error with a correlation id.
 */
import type { Clock } from './base/domain.js';
import { errorDetail } from './base/errors.js';
import type { Logger } from './base/log.js';
import { decide, type WallDecision, type WallOp } from './wall.js';
import { GrantEndedError, type InFlight } from './operations/in-flight.js';
import { envelopeForNextcloudError, isNextcloudError } from './operations/nextcloud-errors.js';
import type { AuditPort, GrantsPort, NextcloudPort } from './operations/ports.js';
import { internalError, refused, type Envelope, type EnvelopeCode } from './base/envelope.js';
import { scrubDeep } from './base/scrub.js';
import { type CallContext } from './base/call.js';

export interface PipelineDeps {
  readonly grants: GrantsPort;
  readonly audit: AuditPort;
  /** Per-instance policy from the owner's config (a Map: agent input is the key). */
  readonly instances: ReadonlyMap<string, { readonly discovery: boolean }>;
  readonly clients: ReadonlyMap<string, NextcloudPort>;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  readonly scrub: (text: string) => string;
  readonly now: Clock;
}

/** What the wall allowed, handed to a step. */
export interface Allowed {
  readonly instance: string;
  /** Canonical paths: `[path]`, or `[from, to]` for a move; '' = a discovery list of the root. */
  readonly paths: readonly string[];
  readonly grantIds: readonly number[];
  readonly discovery: boolean;
  /** Aborted when a grant this operation relies on is revoked or expires. */
  readonly signal: AbortSignal;
}

export type Step<T> = (client: NextcloudPort, allowed: Allowed) => Promise<T>;

export type Outcome<T> =
  | { ok: true; value: T; allowed: Omit<Allowed, 'signal'>; warnings: string[] }
  | { ok: false; envelope: Envelope };

export interface RunOptions<T> {
  /** Grants a ticket is bound to: each must still be active, besides the wall's own. */
  readonly boundGrants?: readonly number[];
  /** Extra fields for the intent line (never content, never a secret). */
  readonly intent?: Record<string, unknown>;
  /** Audit fields describing a successful value (never content, never a secret). */
  readonly describe?: (value: T) => Record<string, unknown>;
}

const HINTS: Record<Extract<WallDecision, { ok: false }>['code'], string> = {
  invalid_path:
    'paths are refused, never repaired: send a plain relative path like "Documents/report.odt"',
  unknown_instance: 'call list_instances for the configured names',
  no_grant: 'call request_access with this path and the mode you need, then wait for the owner',
  same_path: 'choose a destination that differs from the source',
};

export const AUDIT_UNAVAILABLE = 'audit log unavailable; operation refused';

function pathFields(op: WallOp): Record<string, unknown> {
  return op.op === 'move' ? { from: op.from, to: op.to } : { path: op.path };
}

function decidedPathFields(op: WallOp, paths: readonly string[]): Record<string, unknown> {
  return op.op === 'move' ? { from: paths[0], to: paths[1] } : { path: paths[0] };
}

export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /** Appends an audit line (strings scrubbed); rejects when it is not durable. */
  async audit(event: string, fields: Record<string, unknown>): Promise<void> {
    await this.deps.audit.append(event, scrubDeep(fields, this.deps.scrub));
  }

  /** Appends an audit line whose failure must not change the answer; logs the failure. */
  async auditBestEffort(event: string, fields: Record<string, unknown>): Promise<boolean> {
    try {
      await this.audit(event, fields);
      return true;
    } catch (error) {
      this.deps.logger.error('audit append failed', { event, error: errorDetail(error) });
      return false;
    }
  }

  /** The wall alone, for queries that touch nothing (check_access). */
  check(op: WallOp): WallDecision {
    return decide(
      op,
      this.deps.grants.grantsInForce(),
      this.deps.instances.get(op.instance),
      this.deps.now(),
    );
  }

  /** A refusal before the wall (bad arguments, a bad ticket): audited, then answered. */
  async refuse(
    ctx: CallContext,
    code: EnvelopeCode,
    message: string,
    fields: Record<string, unknown> = {},
    hint?: string,
  ): Promise<Envelope> {
    await this.auditBestEffort('refused', {
      surface: ctx.surface,
      tool: ctx.tool,
      code,
      reason: message,
      correlation_id: ctx.correlationId,
      ...fields,
    });
    return refused(code, message, hint === undefined ? {} : { hint });
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
    const decision = this.check(op);
    if (!decision.ok) {
      const envelope = await this.refuse(
        ctx,
        decision.code,
        decision.reason,
        { instance: op.instance, op: op.op, ...pathFields(op) },
        HINTS[decision.code],
      );
      return { ok: false, envelope };
    }
    const bound = options.boundGrants ?? [];
    if (!this.grantsLive([...decision.grantIds, ...bound])) {
      return { ok: false, envelope: await this.grantEnded(ctx, base, 'refused') };
    }
    const decided = { ...base, ...decidedPathFields(op, decision.paths) };
    try {
      // Security: written and fsynced before anything reaches Nextcloud; no line, no operation.
      await this.audit('intent', {
        ...decided,
        grants: [...new Set([...decision.grantIds, ...bound])],
        discovery: decision.discovery,
        ...options.intent,
      });
    } catch (error) {
      this.deps.logger.error('audit intent failed; operation refused', {
        ...base,
        error: errorDetail(error),
      });
      return {
        ok: false,
        envelope: refused('audit_unavailable', AUDIT_UNAVAILABLE, { retry: false }),
      };
    }

    // Security: revoke between check and use wins — look again right before the call.
    const again = this.check(op);
    const sameTarget =
      again.ok &&
      again.paths.length === decision.paths.length &&
      again.paths.every((p, i) => p === decision.paths[i]);
    if (!sameTarget || !this.grantsLive([...decision.grantIds, ...bound])) {
      return { ok: false, envelope: await this.grantEnded(ctx, decided, 'outcome') };
    }
    const client = this.deps.clients.get(op.instance);
    if (client === undefined) {
      this.deps.logger.error('no Nextcloud client for a configured instance', base);
      await this.auditBestEffort('outcome', { ...decided, outcome: 'error', code: 'internal' });
      return { ok: false, envelope: internalError(ctx.correlationId) };
    }

    const handle = this.deps.inFlight.start([...decision.grantIds, ...bound]);
    const allowed: Allowed = {
      instance: op.instance,
      paths: decision.paths,
      grantIds: decision.grantIds,
      discovery: decision.discovery,
      signal: handle.signal,
    };
    try {
      // A step that returned has completed on Nextcloud: report it as done even if a
      // revoke arrived in the meantime (an abort only stops what is still running).
      const value = await step(client, allowed);
      const warnings: string[] = [];
      const described = options.describe?.(value) ?? {};
      if (!(await this.auditBestEffort('outcome', { ...decided, outcome: 'ok', ...described }))) {
        warnings.push('the operation ran, but its outcome could not be written to the audit log');
      }
      const { signal: _signal, ...rest } = allowed;
      return { ok: true, value, allowed: rest, warnings };
    } catch (error) {
      // A step's own refusal tells the precise story (e.g. "stored, but not verified");
      // otherwise an abort means the grant ended under the operation.
      const cause =
        error instanceof OperationRefusal || !handle.signal.aborted ? error : handle.signal.reason;
      const envelope = this.envelopeFor(ctx, cause);
      await this.auditBestEffort('outcome', {
        ...decided,
        outcome: envelope.status,
        code: envelope.code,
        reason: envelope.message,
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
    target: { instance: string; path: string; grantIds: readonly number[]; reason: string },
    step: (client: NextcloudPort) => Promise<T>,
  ): Promise<Outcome<T>> {
    const fields = {
      surface: ctx.surface,
      tool: ctx.tool,
      instance: target.instance,
      path: target.path,
      grants: target.grantIds,
      reason: target.reason,
      correlation_id: ctx.correlationId,
    };
    const client = this.deps.clients.get(target.instance);
    if (client === undefined) return { ok: false, envelope: internalError(ctx.correlationId) };
    try {
      await this.audit('intent', fields);
    } catch (error) {
      this.deps.logger.error('audit intent failed; clean-up not sent', {
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
      const ok = await this.auditBestEffort('outcome', { ...fields, outcome: 'ok' });
      const allowed = {
        instance: target.instance,
        paths: [target.path],
        grantIds: target.grantIds,
        discovery: false,
      };
      return { ok: true, value, allowed, warnings: ok ? [] : ['outcome not audited'] };
    } catch (error) {
      const envelope = this.envelopeFor(ctx, error);
      await this.auditBestEffort('outcome', {
        ...fields,
        outcome: envelope.status,
        code: envelope.code,
      });
      return { ok: false, envelope };
    }
  }

  /** The earliest expiry among these grants (ms), or undefined if none is active. */
  earliestExpiry(ids: readonly number[]): number | undefined {
    const wanted = new Set(ids);
    let earliest: number | undefined;
    const now = this.deps.now();
    for (const g of this.deps.grants.grantsInForce()) {
      if (!(now < g.expiresAt)) continue;
      if (wanted.has(g.id) && (earliest === undefined || g.expiresAt < earliest))
        earliest = g.expiresAt;
    }
    return earliest;
  }

  now(): number {
    return this.deps.now();
  }

  /** Every grant id is active now (state active and now < expiresAt). */
  grantsLive(ids: readonly number[]): boolean {
    if (ids.length === 0) return true;
    const now = this.deps.now();
    const inForce = this.deps.grants.grantsInForce();
    return ids.every((id) => {
      const g = inForce.find((grant) => grant.id === id);
      return g !== undefined && g.state === 'active' && now < g.expiresAt;
    });
  }

  /** Maps a failure of a step to an envelope; unknown failures stay in the log. */
  envelopeFor(ctx: CallContext, error: unknown): Envelope {
    if (error instanceof GrantEndedError) {
      return refused(
        'grant_ended',
        'the grant was revoked or expired while the operation ran; it was stopped',
        {
          hint: 'request access again if you still need it',
        },
      );
    }
    if (isNextcloudError(error)) return envelopeForNextcloudError(error, this.deps.scrub);
    if (error instanceof OperationRefusal) return scrubDeep(error.envelope, this.deps.scrub);
    this.deps.logger.error('operation failed', {
      surface: ctx.surface,
      tool: ctx.tool,
      correlation_id: ctx.correlationId,
      error: errorDetail(error),
    });
    return internalError(ctx.correlationId);
  }

  private async grantEnded(
    ctx: CallContext,
    fields: Record<string, unknown>,
    event: 'refused' | 'outcome',
  ): Promise<Envelope> {
    const message = 'the grant for this path was revoked or has expired; nothing was done';
    await this.auditBestEffort(event, {
      ...fields,
      ...(event === 'outcome' ? { outcome: 'refused' } : {}),
      code: 'grant_ended',
      reason: message,
    });
    return refused('grant_ended', message, {
      hint: 'call request_access again if you still need it',
    });
  }
}

/** A step's deliberate refusal with a vetted envelope (e.g. "not a file"). */
export class OperationRefusal extends Error {
  override readonly name = 'OperationRefusal';
  constructor(readonly envelope: Envelope) {
    super(envelope.message);
  }
}
