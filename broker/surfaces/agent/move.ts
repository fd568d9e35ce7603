import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const MoveInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  from: PathArgSchema,
  to: PathArgSchema,
});

export const MoveOutputSchema = envelopeSchema({
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
    input: MoveInputSchema,
    output: MoveOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.files.move(ctx, args), ({ from, to }) =>
        ok(`moved "${from}" to "${to}"`, { from, to }),
      ),
  });
}
