import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';
import { TicketFields } from './shared.js';

export const ReadInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: PathArgSchema,
});

export const ReadOutputSchema = envelopeSchema({
  path: z.string().optional(),
  size: z.number().nullable().optional(),
  etag: z.string().nullable().optional(),
  ...TicketFields,
});

export function registerRead(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'read',
    title: 'Read a file',
    description:
      'Prepare a download: answers a single-use ticket; GET blob_url (transfer token) within 60 s streams the ' +
      'bytes, with trailers x-broker-sha256 and x-broker-size.',
    input: ReadInputSchema,
    output: ReadOutputSchema,
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    handler: async (args, ctx) =>
      answer(await deps.transfer.read(ctx, args), ({ ticket, ...file }) =>
        ok(`ready: GET the blob_url within ${ticket.expires_in_s} s`, { ...file, ...ticket }),
      ),
  });
}
