/**
 * Argument schemas shared by the tools. They bound sizes and types only: every path is
 * judged by the wall (canonicalPath), never repaired or pre-filtered here.
 */
import { z } from 'zod';
import { STATUSES } from '../base/envelope.js';
import {
  COLLECTION_KINDS,
  COLLECTION_NAMES,
  COLLECTION_WORDS,
  DEFAULT_KIND,
  KIND_NAMES,
  treeItem,
} from '../base/kinds.js';

export const InstanceNameSchema = z
  .string()
  .min(1)
  .max(64)
  .describe('an instance name from list_instances');

export const PathArgSchema = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    'a path relative to the instance root, e.g. "Documents/report.odt" (no "..", no trailing "/")',
  );

export const ModeArgSchema = z.enum(['read', 'write']).describe('"write" includes read');

export const KindArgSchema = z
  .enum(KIND_NAMES)
  .describe(
    `what the item is on: "${DEFAULT_KIND}" (the default: ${treeItem(DEFAULT_KIND) ?? 'a path'}), ${COLLECTION_NAMES} (one ${COLLECTION_WORDS}, named by its name as collections lists it)`,
  );

/** The kinds beyond files (base/kinds.ts), as the collection tools take them. */
export const CollectionKindArgSchema = z.enum(COLLECTION_KINDS);

export const TimestampSchema = z.string().describe('ISO-8601 UTC');

export const CursorArgSchema = z
  .string()
  .min(1)
  .max(2048)
  .optional()
  .describe('the "next" value of the previous page');

/** An item of an access request in an answer, as numbered in the request. */
export const requestItemFields = {
  n: z.number().int(),
  kind: KindArgSchema,
  path: z.string(),
  mode: ModeArgSchema,
};

/** A file or folder in an answer (`path` is each tool's own: optional or not). */
export const entryFields = {
  name: z.string(),
  kind: z.enum(['file', 'folder']),
  size: z.number().nullable().optional(),
  modified: z.string().nullable().optional(),
};

/** The fields every envelope may carry; tools add their own (all optional). */
export const envelopeBaseShape = {
  status: z.enum(STATUSES),
  message: z.string(),
  code: z.string().optional(),
  retry: z.boolean().optional(),
  // rate_limited: whole seconds to wait before calling again.
  retry_after: z.number().int().positive().optional(),
  hint: z.string().optional(),
  warnings: z.array(z.string()).optional(),
  next: z.string().optional(),
  correlation_id: z.string().optional(),
  // A refusal because a grant ended (grant_revoked / grant_expired): which, when, who.
  grant: z.number().int().optional(),
  request: z.number().int().optional(),
  ended_at: z.string().optional(),
  ended_by: z.literal('owner').optional(),
  // A refusal of the arguments (secret_in_arguments): which field, never its value.
  field: z.string().optional(),
  // An insufficient_space refusal: the account's space in bytes, and how many more are
  // needed (`in_flight`: the broker's own writes not yet shown); or, in a folder another
  // user shared, whose space and what Nextcloud shows free of it (space-guard.ts).
  space: z
    .union([
      z.strictObject({
        quota: z.number(),
        used: z.number(),
        trash: z.number(),
        in_flight: z.number().optional(),
        bytes: z.number(),
        needed: z.number(),
      }),
      z.strictObject({
        owner: z.string(),
        free: z.union([z.number(), z.enum(['unlimited', 'unknown'])]),
        in_flight: z.number().optional(),
        bytes: z.number(),
        rule: z.enum(['sharer_quota', 'sharer_free']),
      }),
    ])
    .optional(),
};

/** A tool's output schema: the envelope plus its own optional result fields, strict. */
export function envelopeSchema<S extends z.ZodRawShape>(fields: S) {
  return z.strictObject({ ...envelopeBaseShape, ...fields });
}

export const BaseEnvelopeSchema = envelopeSchema({});
