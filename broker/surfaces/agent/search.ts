import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { NAME_MATCHING } from '../../base/search-term.js';
import { escapeForReason } from '../../base/text.js';
import { answer } from '../answer.js';
import { CursorArgSchema, InstanceNameSchema, entryFields, envelopeSchema } from '../schemas.js';
import { READ_ONLY_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const SearchInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  path: z
    .string()
    .max(4096)
    .describe(
      'the folder to search under, relative to the instance root; "" or "/" is the whole instance (discovery only)',
    ),
  query: z
    .string()
    .min(1)
    .max(1000)
    .describe(
      'part of a file or folder name, matched literally (% and _ are plain characters); never file contents',
    ),
  cursor: CursorArgSchema,
});

const EntrySchema = z.strictObject({ ...entryFields, path: z.string() });

export const SearchOutputSchema = envelopeSchema({
  path: z.string().optional(),
  query: z.string().optional(),
  discovery: z.boolean().optional(),
  matching: z.string().optional(),
  entries: z.array(EntrySchema).optional(),
});

export function registerSearch(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'search',
    title: 'Search file names below a folder',
    description:
      'Find files and folders below a folder whose NAME contains the query (names only, never file ' +
      'contents), at any depth. Needs a read (or write) grant on the folder; on instances with ' +
      'discovery any folder, names and paths only. Pages: pass "next" back as "cursor".',
    input: SearchInputSchema,
    output: SearchOutputSchema,
    annotations: READ_ONLY_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.files.search(ctx, args), ({ path, query, discovery, entries, next }) => {
        // Security: discovery shows names only (and the path, which is names); sizes and
        // dates need a read grant.
        const shown = entries.map((e) =>
          discovery
            ? { name: e.name, kind: e.kind, path: e.path }
            : { name: e.name, kind: e.kind, path: e.path, size: e.size, modified: e.modified },
        );
        const where = path === '' ? 'the whole instance' : `"${path}"`;
        const [count, contain] =
          shown.length === 1 ? ['1 name', 'contains'] : [`${shown.length} names`, 'contain'];
        const more =
          next === undefined ? '' : '; more results: call search again with cursor set to next';
        return ok(
          `${count} below ${where} ${contain} "${escapeForReason(query, 60)}" (names were matched, not file contents)${more}`,
          {
            path,
            query,
            discovery,
            matching: NAME_MATCHING,
            entries: shown,
            ...(next === undefined ? {} : { next }),
            ...(discovery
              ? { hint: 'names only (discovery); request read access for sizes and dates' }
              : {}),
          },
        );
      }),
  });
}
