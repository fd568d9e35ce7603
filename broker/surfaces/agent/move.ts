import { z } from 'zod';
import { ok, withWarnings } from '../../base/envelope.js';
import { InstanceName, PathArg, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const MoveInput = z.strictObject({ instance: InstanceName, from: PathArg, to: PathArg });

export const MoveOutput = envelopeSchema({
  from: z.string().optional(),
  to: z.string().optional(),
});

export function registerMove(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'move',
    title: 'Move or rename',
    description:
      'Move or rename a file or folder. Needs write access on both paths. Never overwrites: if "to" exists the ' +
      'move is refused. The target folder must exist.',
    input: MoveInput,
    output: MoveOutput,
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    handler: async (args, ctx) => {
      const outcome = await deps.files.move(ctx, args);
      if (!outcome.ok) return outcome.envelope;
      const [from, to] = outcome.allowed.paths;
      return withWarnings(ok(`moved "${from}" to "${to}"`, { from, to }), outcome.warnings);
    },
  });
}
