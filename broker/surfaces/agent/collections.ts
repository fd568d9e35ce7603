import { z } from 'zod';
import { ok } from '../../base/envelope.js';
import { answer } from '../answer.js';
import { COLLECTION_KINDS, collectionWord } from '../../base/kinds.js';
import { CollectionKindArgSchema, InstanceNameSchema, envelopeSchema } from '../schemas.js';
import { READ_ONLY_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';

export const CollectionsInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  kind: CollectionKindArgSchema.describe(
    COLLECTION_KINDS.map((k) => `"${k}" (${collectionWord(k)}s)`).join(' or '),
  ),
});

const CollectionOutSchema = z.strictObject({
  name: z.string().describe('the name to request access with and to pass to the other tools'),
  display_name: z.string().nullable(),
  owner: z.string().nullable().optional(),
  components: z.array(z.string()).optional(),
  generated: z.boolean().optional(),
  ambiguous: z.boolean().optional(),
});

export const CollectionsOutputSchema = envelopeSchema({
  kind: CollectionKindArgSchema.optional(),
  discovery: z.boolean().optional(),
  collections: z.array(CollectionOutSchema).optional(),
});

export function registerCollections(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'collections',
    title: `List ${COLLECTION_KINDS.map((k) => `${collectionWord(k)}s`).join(' or ')}`,
    description:
      `The ${COLLECTION_KINDS.map((k) => `${collectionWord(k)}s (kind "${k}")`).join(' or ')} on an instance: their names ` +
      'and display names, never their contents. With discovery on the instance you see all of them; ' +
      'otherwise only those you hold a grant on. Request access with kind and the name shown here.',
    input: CollectionsInputSchema,
    output: CollectionsOutputSchema,
    annotations: READ_ONLY_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.collections.collections(ctx, args), (v) => {
        const what = collectionWord(v.kind);
        const shown = v.collections.map((c) => ({
          name: c.name,
          display_name: c.displayName,
          owner: c.owner,
          ...(c.components === undefined ? {} : { components: c.components }),
          ...(c.generated ? { generated: true } : {}),
          ...(c.ambiguous ? { ambiguous: true } : {}),
        }));
        const warnings = [
          ...(v.collections.some((c) => c.ambiguous)
            ? [
                `two ${what}s answer to one name (marked ambiguous): the broker refuses to use that name`,
              ]
            : []),
          ...(v.collections.some((c) => c.generated)
            ? [
                'generated address books (the account directory, recently contacted) are searched only when the owner grants them by name',
              ]
            : []),
          ...v.missing.map(
            (n) => `the granted ${what} "${n}" is not on the server (renamed or deleted?)`,
          ),
        ];
        return ok(
          `${shown.length} ${what}${shown.length === 1 ? '' : 's'}${v.discovery ? ' (discovery: names only)' : ' you hold a grant on'}`,
          {
            kind: v.kind,
            discovery: v.discovery,
            collections: shown,
            ...(warnings.length > 0 ? { warnings } : {}),
          },
        );
      }),
  });
}
