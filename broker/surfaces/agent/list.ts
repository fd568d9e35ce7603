import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { CursorArgSchema, InstanceNameSchema, entryFields, envelopeSchema } from '../schemas.js';
import { READ_ONLY_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const ListInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: z
    .string()
    .max(4096)
    .describe(
      'a folder path relative to the instance root; "" or "/" is the root (discovery only)',
    ),
  cursor: CursorArgSchema,
});

const EntrySchema = z.strictObject({ ...entryFields, path: z.string().optional() });

export const ListOutputSchema = envelopeSchema({
  path: z.string().optional(),
  discovery: z.boolean().optional(),
  entries: z.array(EntrySchema).optional(),
});

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
    handler: async (args, ctx) =>
      answer(await deps.files.list(ctx, args), ({ path, discovery, entries, next }) => {
        // Security: discovery shows names only; sizes and dates need a read grant.
        const shown = entries.map((e) =>
          discovery
            ? { name: e.name, kind: e.kind }
            : { name: e.name, kind: e.kind, path: e.path, size: e.size, modified: e.modified },
        );
        const where = path === '' ? 'the root' : `"${path}"`;
        const more =
          next === undefined ? '' : '; more entries: call list again with cursor set to next';
        return ok(`${shown.length} entr${shown.length === 1 ? 'y' : 'ies'} in ${where}${more}`, {
          path,
          discovery,
          entries: shown,
          ...(next === undefined ? {} : { next }),
          ...(discovery ? { hint: 'names only (discovery); request read access for details' } : {}),
        });
      }),
  });
}
