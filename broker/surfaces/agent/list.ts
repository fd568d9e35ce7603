import { answer } from '../answer.js';
import { ListInputSchema, ListOutputSchema, listAnswer } from '../listing.js';
import { READ_ONLY_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export function registerList(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'list',
    title: 'List a folder',
    description:
      'List a folder you have a read (or write) grant on. On instances with discovery you may list any ' +
      'folder, names only. Pages: pass "next" back as "cursor". File content is never available here.',
    input: ListInputSchema,
    output: ListOutputSchema,
    annotations: READ_ONLY_TOOL,
    handler: async (args, ctx) => answer(await deps.files.list(ctx, args), listAnswer),
  });
}
