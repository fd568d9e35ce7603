import { answer } from '../answer.js';
import { ListInputSchema, ListOutputSchema, listAnswer } from '../listing.js';
import { READ_ONLY_TOOL, type ToolRegistry } from '../tool.js';
import type { TransferToolDeps } from './deps.js';

/**
 * The agent surface's `list`, for `broker fetch --recursive`: the CLI walks a folder with
 * it, then fetches each file with its own `read` (ticket, wall decision, audit record).
 */
export function registerTransferList(registry: ToolRegistry, deps: TransferToolDeps): void {
  registry.add({
    name: 'list',
    title: 'List a folder',
    description:
      'List a folder under a read (or write) grant, as the agent tool `list` (names only under discovery). ' +
      'Pages: pass "next" back as "cursor". `broker fetch --recursive` walks a folder with it.',
    input: ListInputSchema,
    output: ListOutputSchema,
    annotations: READ_ONLY_TOOL,
    handler: async (args, ctx) => answer(await deps.files.list(ctx, args), listAnswer),
  });
}
