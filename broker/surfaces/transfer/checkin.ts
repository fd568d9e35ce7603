import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';
import { LockTokenSchema, Sha256Schema, SizeSchema, TicketFields } from './shared.js';

export const CheckinInputSchema = z
  .strictObject({
    instance: InstanceNameSchema,
    path: PathArgSchema,
    lock_token: LockTokenSchema,
    size: SizeSchema.optional().describe('the exact number of bytes the PUT will carry'),
    sha256: Sha256Schema.optional().describe(
      'the sha256 of the body; a body that differs is refused and nothing is written',
    ),
    abandon: z.boolean().optional().describe('true: release the lock without uploading'),
  })
  .superRefine((args, ctx) => {
    if (args.abandon !== true && args.size === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['size'],
        message: 'size is required unless abandon is true',
      });
    }
    if (args.abandon === true && args.size !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['size'],
        message: 'abandon uploads nothing; leave size out',
      });
    }
  });

export const CheckinOutputSchema = envelopeSchema({
  path: z.string().optional(),
  size: z.number().int().optional(),
  unlocked: z.boolean().optional(),
  etag: z.string().nullable().optional(),
  ...TicketFields,
});

export function registerCheckin(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'checkin',
    title: 'Check in a file',
    description:
      'Finish a checkout. With size: answers an upload ticket; the PUT to blob_url writes under the lock, ' +
      "Nextcloud's hash of what it stored is checked, then the file is unlocked. With abandon true: just unlocks.",
    input: CheckinInputSchema,
    output: CheckinOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.transfer.checkin(ctx, args), (v) =>
        v.kind === 'abandoned'
          ? ok(`lock released on "${v.path}"; nothing was uploaded`, {
              path: v.path,
              unlocked: true,
              etag: v.etag,
            })
          : ok(
              `ready: PUT exactly ${v.size} bytes to the blob_url; the broker verifies and unlocks`,
              { path: v.path, size: v.size, ...v.ticket },
            ),
      ),
  });
}
