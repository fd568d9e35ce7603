/**
 * One request as the agent reads it: its number, instance, state and, per item, what
 * holds now. `check_access` answers it for a request number; `request_access` answers it
 * for the request it just made (state `pending`); and a client that awaits
 * `request_access` as an MCP task gets `check_access`'s answer as the task's result,
 * which must validate against `request_access`'s declared output schema. So both tools
 * declare these fields, from here.
 */
import { z } from 'zod';
import type { RequestRecord } from '../../base/domain.js';
import type { ItemStatus } from '../../operations/requests.js';
import { TimestampSchema, requestItemFields } from '../schemas.js';

export const RequestStateSchema = z.enum([
  'pending',
  'approved',
  'partially_approved',
  'denied',
  'expired',
  'discarded',
]);

export const RequestItemStatusSchema = z.strictObject({
  ...requestItemFields,
  granted: z.boolean(),
  grant: z.number().int().optional(),
  grant_state: z.enum(['active', 'expired', 'revoked']).optional(),
  expires_at: TimestampSchema.optional(),
  ended_at: TimestampSchema.optional(),
  ended_by: z.literal('owner').optional(),
  holds: z.string().describe('what holds now: "active until T", "revoked at T by the owner", …'),
});

/** The envelope fields of one request (each optional: refusals carry none of them). */
export const requestStatusFields = {
  request: z.number().int().optional(),
  instance: z.string().optional(),
  state: RequestStateSchema.optional(),
  items: z.array(RequestItemStatusSchema).optional(),
};

/** One item's "what holds now", from its grant's state at the moment of the answer. */
export function holds(
  item: Pick<ItemStatus, 'grant_state' | 'expires_at' | 'ended_at'>,
  requestState: RequestRecord['state'],
): string {
  switch (item.grant_state) {
    case 'active':
      return `active until ${item.expires_at}`;
    case 'revoked':
      return `revoked at ${item.ended_at} by the owner`;
    case 'expired':
      return `expired at ${item.ended_at}`;
    default:
      return requestState === 'pending' ? 'waiting for the owner' : 'not granted';
  }
}

/** The fields of a request just made: pending, nothing granted yet. */
export function newRequestStatus(record: Pick<RequestRecord, 'id' | 'instance' | 'items'>) {
  return {
    request: record.id,
    instance: record.instance,
    state: 'pending' as const,
    items: record.items.map((it) => ({
      n: it.n,
      kind: it.kind,
      path: it.path,
      mode: it.mode,
      granted: false,
      holds: holds({}, 'pending'),
    })),
  };
}
