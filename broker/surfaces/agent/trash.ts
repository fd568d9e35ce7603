import { z } from 'zod';
import { ok, withWarnings } from '../../base/envelope.js';
import { InstanceName, PathArg, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const TrashInput = z.strictObject({ instance: InstanceName, path: PathArg });

export const TrashOutput = envelopeSchema({ path: z.string().optional() });

export function registerTrash(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'trash',
    title: 'Move to the trash bin',
    description:
      "Move a file or folder to the instance's trash bin (the owner can restore it). Needs write access. " +
      'Refused when the trash bin is disabled, since deleting would then be permanent.',
    input: TrashInput,
    output: TrashOutput,
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    },
    handler: async (args, ctx) => {
      const outcome = await deps.files.trash(ctx, args);
      if (!outcome.ok) return outcome.envelope;
      const path = outcome.allowed.paths[0];
      return withWarnings(
        ok(`moved "${path}" to the trash bin; the owner can restore it`, { path }),
        outcome.warnings,
      );
    },
  });
}
