/**
 * The broker's own clean-up calls (releasing the lock of a checkout whose grant ended).
 *
 * Security: such a call bypasses the wall because the grant is gone by design, and it
 * only ever narrows what is possible (an unlock); the path comes from the broker's own
 * checkout table, which the wall checked at checkout. It is still audited first:
 * without an intent line nothing is sent.
 */
import type { IntentDetail, OutcomeDetail } from '../audit/events.js';
import type { CallContext } from '../base/call.js';
import { internalError, refused } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { OutcomeAnswers, type AuditTrail } from './audit-trail.js';
import type { NextcloudPort } from './ports.js';
import { envelopeForFailure } from './step-failure.js';
import { AUDIT_UNAVAILABLE, type Outcome } from './step.js';

export interface SystemCallDeps {
  readonly trail: AuditTrail;
  readonly clients: ReadonlyMap<string, NextcloudPort>;
  readonly logger: Logger;
  readonly scrub: (text: string) => string;
}

/** What a clean-up call is on, and why. */
export interface SystemTarget {
  instance: string;
  path: string;
  grantIds: readonly number[];
  reason: string;
  /** Extra fields for both lines (never content, never a secret). */
  fields?: Pick<IntentDetail, 'lock' | 'attempt'>;
}

/** Runs `step` on the instance's client between an intent and an outcome line. */
export async function runSystemCall<T>(
  deps: SystemCallDeps,
  ctx: CallContext,
  target: SystemTarget,
  step: (client: NextcloudPort) => Promise<T>,
  describe?: (value: T) => OutcomeDetail,
): Promise<Outcome<T>> {
  const fields = {
    surface: ctx.surface,
    tool: ctx.tool,
    instance: target.instance,
    path: target.path,
    grants: [...target.grantIds],
    reason: target.reason,
    ...target.fields,
    correlation_id: ctx.correlationId,
  };
  const client = deps.clients.get(target.instance);
  if (client === undefined) return { ok: false, envelope: internalError(ctx.correlationId) };
  try {
    await deps.trail.append({ event: 'intent', ...fields });
  } catch (error) {
    deps.logger.error('audit intent failed; clean-up not sent', {
      ...fields,
      error: errorDetail(error),
    });
    return {
      ok: false,
      envelope: refused('audit_unavailable', AUDIT_UNAVAILABLE, { retry: false }),
    };
  }
  const answers = new OutcomeAnswers(); // Nextcloud's answers to the call's requests
  try {
    const value = await client.recording(answers.add, () => step(client));
    const ok = await deps.trail.bestEffort({
      event: 'outcome',
      ...fields,
      outcome: 'ok',
      ...answers.outcome(describe?.(value) ?? {}),
    });
    return { ok: true, value, warnings: ok ? [] : ['outcome not audited'] };
  } catch (error) {
    const envelope = envelopeForFailure(deps, ctx, error);
    await deps.trail.bestEffort({
      event: 'outcome',
      ...fields,
      outcome: envelope.status,
      code: envelope.code,
      ...answers.outcome({ reason: envelope.message }),
    });
    return { ok: false, envelope };
  }
}
