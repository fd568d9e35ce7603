import { z } from 'zod';
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
    handler: (args, ctx) => Promise.resolve(deps.requests.status(ctx, args)),
  });
}
