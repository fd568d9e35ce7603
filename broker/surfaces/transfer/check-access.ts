import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import {
  InstanceNameSchema,
  ModeArgSchema,
  PathArgSchema,
  TimestampSchema,
  envelopeSchema,
} from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';

export const TransferCheckAccessInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: PathArgSchema,
  mode: ModeArgSchema,
});

export const TransferCheckAccessOutputSchema = envelopeSchema({
  path: z.string().optional(),
  mode: ModeArgSchema.optional(),
  expires_at: TimestampSchema.optional(),
});

export function registerTransferCheckAccess(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'check_access',
    title: 'Check access to a path',
    description:
      'Whether an active grant allows this mode on this path now ("ok"), or not ("refused").',
    input: TransferCheckAccessInputSchema,
    output: TransferCheckAccessOutputSchema,
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    handler: async (args, ctx) =>
      answer(await deps.transfer.checkAccess(ctx, args), (v) =>
        ok(`${v.mode} allowed on "${v.path}"`, v),
      ),
  });
}
