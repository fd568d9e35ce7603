/**
 * How a step's failure is answered: the one error boundary of every operation. A grant
 * that ended under it, Nextcloud's refusal or failure, a step's own deliberate refusal:
 * each by its code, scrubbed. Security: any other error stays in the log; the agent gets
 * a generic answer with the call's correlation id, never the error's text.
 */
import type { CallContext } from '../base/call.js';
import { internalError, type Envelope } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { scrubDeep } from '../base/scrub.js';
import { GrantEndedError } from './in-flight.js';
import { envelopeForNextcloudError, isNextcloudError } from './nextcloud-errors.js';
import { OperationRefusal } from './step.js';
import { cutRefusal } from './wall-answers.js';

export interface StepFailureDeps {
  readonly logger: Logger;
  readonly scrub: (text: string) => string;
}

/** The envelope a step's failure is answered with. */
export function envelopeForFailure(
  deps: StepFailureDeps,
  ctx: CallContext,
  error: unknown,
): Envelope {
  if (error instanceof GrantEndedError) return cutRefusal(error.grantIds, error.end);
  if (isNextcloudError(error)) return envelopeForNextcloudError(error, deps.scrub);
  if (error instanceof OperationRefusal) return scrubDeep(error.envelope, deps.scrub);
  deps.logger.error('operation failed', {
    surface: ctx.surface,
    tool: ctx.tool,
    correlation_id: ctx.correlationId,
    error: errorDetail(error),
  });
  return internalError(ctx.correlationId);
}
