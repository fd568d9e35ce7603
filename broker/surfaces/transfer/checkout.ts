import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';
import { TicketFields } from './shared.js';

export const CheckoutInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: PathArgSchema,
  timeout_s: z
    .number()
    .int()
    .min(1)
    .max(24 * 3600)
    .optional()
    .describe('lock duration; never longer than the grant'),
});

export const CheckoutOutputSchema = envelopeSchema({
  path: z.string().optional(),
  lock_token: z.string().optional(),
  lock_expires_at: z.string().optional(),
  size: z.number().nullable().optional(),
  etag: z.string().nullable().optional(),
  ...TicketFields,
});

export function registerCheckout(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'checkout',
    title: 'Check out a file',
    description:
      'Lock an existing file on Nextcloud (write grant) and prepare its download: answers lock_token and a ' +
      'read ticket. Check in (or abandon) with the lock_token; the broker also unlocks when the grant ends.',
    input: CheckoutInputSchema,
    output: CheckoutOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.transfer.checkout(ctx, args), ({ ticket, seconds, ...checkout }) =>
        ok(
          `checked out (locked for ${seconds} s): GET the blob_url, then checkin with the lock_token`,
          { ...checkout, ...ticket },
        ),
      ),
  });
}
