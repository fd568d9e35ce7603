/**
 * A folder listing as a tool answers it: the agent surface's `list` and the transfer
 * surface's `list` (which `broker fetch --recursive` walks) take the same arguments and
 * word the same answer.
 */
import { z } from 'zod';
import { ok, type Envelope } from '../base/envelope.js';
import type { Listing } from '../operations/files.js';
import { CursorArgSchema, InstanceNameSchema, entryFields, envelopeSchema } from './schemas.js';

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

/** The `ok` answer to a listing page. */
export function listAnswer({ path, discovery, entries, next }: Listing): Envelope {
  // Security: discovery shows names only; sizes and dates need a read grant.
  const shown = entries.map((e) =>
    discovery
      ? { name: e.name, kind: e.kind }
      : { name: e.name, kind: e.kind, path: e.path, size: e.size, modified: e.modified },
  );
  const where = path === '' ? 'the root' : `"${path}"`;
  const more = next === undefined ? '' : '; more entries: call list again with cursor set to next';
  return ok(`${shown.length} entr${shown.length === 1 ? 'y' : 'ies'} in ${where}${more}`, {
    path,
    discovery,
    entries: shown,
    ...(next === undefined ? {} : { next }),
    ...(discovery ? { hint: 'names only (discovery); request read access for details' } : {}),
  });
}
