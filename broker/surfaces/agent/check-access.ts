import { z } from 'zod';
import type { RequestRecord } from '../../base/domain.js';
import { ok, pending, type Envelope } from '../../base/envelope.js';
import type { AccessStatus } from '../../operations/requests.js';
import { answer } from '../answer.js';
import { ModeArg, Timestamp, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const CheckAccessInput = z.strictObject({
  request: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('a request number from request_access; omit to list your active grants'),
});

const RequestState = z.enum([
  'pending',
  'approved',
  'partially_approved',
  'denied',
  'expired',
  'discarded',
]);

export const CheckAccessOutput = envelopeSchema({
  request: z.number().int().optional(),
  instance: z.string().optional(),
  state: RequestState.optional(),
  items: z
    .array(
      z.strictObject({
        n: z.number().int(),
        path: z.string(),
        mode: ModeArg,
        granted: z.boolean(),
        grant: z.number().int().optional(),
        grant_state: z.enum(['active', 'expired', 'revoked']).optional(),
        expires_at: Timestamp.optional(),
      }),
    )
    .optional(),
  grants: z
    .array(
      z.strictObject({
        grant: z.number().int(),
        request: z.number().int(),
        instance: z.string(),
        path: z.string(),
        mode: ModeArg,
        expires_at: Timestamp,
      }),
    )
    .optional(),
});

const STATE_MESSAGES: Record<RequestRecord['state'], (id: number) => string> = {
  pending: (id) => `request #${id} is waiting for the owner; call check_access again later`,
  approved: (id) => `request #${id} was approved; the items are usable until their expiry`,
  partially_approved: (id) =>
    `request #${id} was partially approved; only the items marked granted are usable`,
  denied: (id) => `request #${id} was denied; do not send it again as is`,
  expired: (id) => `request #${id} expired without a decision; request again if you still need it`,
  discarded: (id) =>
    `request #${id} was discarded when the broker restarted; request again if you still need it`,
};

function renderStatus(status: AccessStatus): Envelope {
  if (status.kind === 'grants') {
    const { grants } = status;
    return ok(
      grants.length === 0
        ? 'no active grants; call request_access to ask the owner for access'
        : `${grants.length} active grant${grants.length === 1 ? '' : 's'}`,
      { grants },
    );
  }
  const { kind: _kind, ...fields } = status;
  const message = STATE_MESSAGES[status.state](status.request);
  return status.state === 'pending' ? pending(message, fields) : ok(message, fields);
}

export function registerCheckAccess(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'check_access',
    title: 'Check access',
    description:
      'With a request number: the state of that request (status "pending" while the owner has not decided) ' +
      'and, per item, whether it was granted and until when. Without arguments: all your active grants.',
    input: CheckAccessInput,
    output: CheckAccessOutput,
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    handler: (args) => Promise.resolve(answer(deps.requests.status(args), renderStatus)),
  });
}
