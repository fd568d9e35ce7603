/**
 * SQLite rows → domain records. Rows are parsed, not cast: a row that does not fit
 * (a hand-edited or corrupted database) stops the broker rather than granting access
 * on a guess.
 */
import { z } from 'zod';
import type { GrantRecord, Kind, Mode, RequestItem, RequestRecord } from '../base/domain.js';
import { CodedError } from '../base/coded-error.js';
import { KIND_NAMES, MODES } from '../base/kinds.js';

/** A row id (SQLite INTEGER PRIMARY KEY) and a time in epoch milliseconds. */
export const IdSchema = z.number().int().positive();
export const TimeSchema = z.number().int();
const ModeSchema = z.enum(MODES) satisfies z.ZodType<Mode>;
const KindSchema = z.enum(KIND_NAMES) satisfies z.ZodType<Kind>;

export const RequestRowSchema = z.strictObject({
  id: IdSchema,
  instance: z.string().min(1),
  reason: z.string(),
  state: z.enum(['pending', 'approved', 'partially_approved', 'denied', 'expired', 'discarded']),
  created_at: TimeSchema,
  decided_at: TimeSchema.nullable(),
  decided_by: z.string().nullable(),
});

export const ItemRowSchema = z.strictObject({
  request_id: IdSchema,
  n: IdSchema,
  path: z.string().min(1),
  mode: ModeSchema,
  kind: KindSchema,
});

export const GrantRowSchema = z.strictObject({
  id: IdSchema,
  request_id: IdSchema,
  item_no: IdSchema,
  instance: z.string().min(1),
  path: z.string().min(1),
  mode: ModeSchema,
  state: z.enum(['active', 'expired', 'revoked']),
  created_at: TimeSchema,
  expires_at: TimeSchema,
  ended_at: TimeSchema.nullable(),
  kind: KindSchema,
});

export type GrantStoreErrorCode = 'corrupt' | 'invalid_input' | 'schema';

export class GrantStoreError extends CodedError<GrantStoreErrorCode> {
  override readonly name = 'GrantStoreError';
}

/** A row parsed by its table's schema, or `corrupt`. */
export function parseRow<T>(schema: z.ZodType<T>, row: unknown, table: string): T {
  const r = schema.safeParse(row);
  if (!r.success) {
    throw new GrantStoreError(
      'corrupt',
      `a row in ${table} does not match the schema (${r.error.issues[0]?.path.join('.') ?? '?'}): the grant database is damaged or was edited by hand`,
    );
  }
  return r.data;
}

export function toGrant(row: unknown): GrantRecord {
  const g = parseRow(GrantRowSchema, row, 'grants');
  return {
    id: g.id,
    requestId: g.request_id,
    itemNo: g.item_no,
    instance: g.instance,
    kind: g.kind,
    path: g.path,
    mode: g.mode,
    state: g.state,
    createdAt: g.created_at,
    expiresAt: g.expires_at,
    endedAt: g.ended_at,
  };
}

export function toRequest(
  row: unknown,
  itemRows: readonly unknown[],
  grants: readonly GrantRecord[],
): RequestRecord {
  const r = parseRow(RequestRowSchema, row, 'requests');
  const byItem = new Map(grants.map((g) => [g.itemNo, g]));
  const items: RequestItem[] = itemRows.map((raw) => {
    const it = parseRow(ItemRowSchema, raw, 'items');
    return {
      n: it.n,
      kind: it.kind,
      path: it.path,
      mode: it.mode,
      grant: byItem.get(it.n) ?? null,
    };
  });
  return {
    id: r.id,
    instance: r.instance,
    reason: r.reason,
    state: r.state,
    createdAt: r.created_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    items,
  };
}
