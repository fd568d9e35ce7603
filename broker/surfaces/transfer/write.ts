import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';
import { EtagSchema, LockTokenSchema, Sha256Schema, SizeSchema, TicketFields } from './shared.js';

export const WriteInputSchema = z
  .strictObject({
    instance: InstanceNameSchema,
    path: PathArgSchema,
    size: SizeSchema.describe('the exact number of bytes the PUT will carry'),
    if_match: EtagSchema.optional().describe('replace: the etag the file had when read'),
    if_none_match: z.literal('*').optional().describe('create: "*" (refused if the file exists)'),
    lock_token: LockTokenSchema.optional().describe(
      'write a checked-out file (may come with if_match)',
    ),
    sha256: Sha256Schema.optional().describe(
      'the sha256 of the body; a body that differs is refused and nothing is written',
    ),
  })
  .superRefine((args, ctx) => {
    // Security: a write states exactly what it expects to overwrite; never a silent clobber.
    const chosen = [args.if_match, args.if_none_match, args.lock_token].filter(
      (v) => v !== undefined,
    ).length;
    const lockWithEtag =
      args.lock_token !== undefined &&
      args.if_match !== undefined &&
      args.if_none_match === undefined;
    if (chosen !== 1 && !lockWithEtag) {
      ctx.addIssue({
        code: 'custom',
        message:
          'give exactly one of if_none_match "*" (create), if_match (replace) or lock_token (checked out)',
      });
    }
  });

export const WriteOutputSchema = envelopeSchema({
  path: z.string().optional(),
  size: z.number().int().optional(),
  etag: z.string().nullable().optional(),
  ...TicketFields,
});

export function registerWrite(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'write',
    title: 'Write a file',
    description:
      'Prepare an upload: answers a single-use ticket; PUT blob_url (transfer token, Content-Length = size) ' +
      'within 60 s. Never overwrites silently: create with if_none_match "*", replace with if_match <etag>.',
    input: WriteInputSchema,
    output: WriteOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.transfer.write(ctx, args), ({ ticket, ...file }) =>
        ok(`ready: PUT exactly ${file.size} bytes to the blob_url`, { ...file, ...ticket }),
      ),
  });
}
