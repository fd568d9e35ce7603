import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { InstanceNameSchema, PathArgSchema, envelopeSchema } from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const MkdirInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: PathArgSchema,
});

export const MkdirOutputSchema = envelopeSchema({ path: z.string().optional() });

export function registerMkdir(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'mkdir',
    title: 'Create a folder',
    description:
      'Create one folder. Needs write access on the path (or a folder above it). The parent must exist; ' +
      'an existing folder is refused.',
    input: MkdirInputSchema,
    output: MkdirOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.files.mkdir(ctx, args), ({ path }) =>
        ok(`created folder "${path}"`, { path }),
      ),
  });
}
