/**
 * SQLite rows → domain records. Rows are parsed, not cast: a row that does not fit
 * (a hand-edited or corrupted database) stops the broker rather than granting access
 * on a guess.
 */
import { z } from 'zod';
import type { GrantRecord, RequestItem, RequestRecord } from '../base/domain.js';
import { CodedError } from '../base/coded-error.js';

export const id = z.number().int().positive();
export const time = z.number().int();
const mode = z.enum(['read', 'write']);
const kind = z.enum(['files', 'calendar', 'contacts']);

export const RequestRowSchema = z.strictObject({
  id,
  instance: z.string().min(1),
  reason: z.string(),
  state: z.enum(['pending', 'approved', 'partially_approved', 'denied', 'expired', 'discarded']),
  created_at: time,
  decided_at: time.nullable(),
  decided_by: z.string().nullable(),
});

export const ItemRowSchema = z.strictObject({
  request_id: id,
  n: id,
  path: z.string().min(1),
  mode,
  kind,
});

export const GrantRowSchema = z.strictObject({
  id,
  request_id: id,
  item_no: id,
  instance: z.string().min(1),
  path: z.string().min(1),
  mode,
  state: z.enum(['active', 'expired', 'revoked']),
  created_at: time,
  expires_at: time,
  ended_at: time.nullable(),
  kind,
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
