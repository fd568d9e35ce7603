import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const TrashInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: PathArgSchema,
});

export const TrashOutputSchema = envelopeSchema({
  path: z.string().optional(),
  trashed_as: z.string().optional(),
});

export function registerTrash(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'trash',
    title: 'Move to the trash bin',
    description:
      "Move a file or folder to the instance's trash bin (the owner can restore it). Needs write access. " +
      'Refused when the trash bin is disabled, since deleting would then be permanent.',
    input: TrashInputSchema,
    output: TrashOutputSchema,
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    },
    handler: async (args, ctx) =>
      answer(await deps.files.trash(ctx, args), ({ path, trash }) =>
        ok(
          `moved "${path}" to the trash bin as "${trash.renamed}" (a name no other delete can take); the owner can restore it`,
          { path, trashed_as: trash.renamed },
        ),
      ),
  });
}
