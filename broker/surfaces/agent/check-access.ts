import { z } from 'zod';
import type { RequestRecord } from '../../base/domain.js';
import { ok, pending, type Envelope } from '../../base/envelope.js';
import type { AccessStatus, ItemStatus } from '../../operations/requests.js';
import { answer } from '../answer.js';
import { KindArgSchema, ModeArgSchema, TimestampSchema, envelopeSchema } from '../schemas.js';
import type { ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';
import { holds, requestStatusFields } from './request-status.js';

export const CheckAccessInputSchema = z.strictObject({
  request: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('a request number from request_access; omit to list your active grants'),
});

export const CheckAccessOutputSchema = envelopeSchema({
  ...requestStatusFields,
  grants: z
    .array(
      z.strictObject({
        grant: z.number().int(),
        request: z.number().int(),
        instance: z.string(),
        kind: KindArgSchema,
        path: z.string(),
        mode: ModeArgSchema,
        expires_at: TimestampSchema,
      }),
    )
    .optional(),
  pending_requests: z
    .array(
      z.strictObject({ request: z.number().int(), instance: z.string(), items: z.number().int() }),
    )
    .optional()
    .describe('without arguments: the requests still waiting for the owner'),
});

const UNDECIDED_MESSAGES: Record<
  Exclude<RequestRecord['state'], 'approved' | 'partially_approved'>,
  (id: number) => string
> = {
  pending: (id) => `request #${id} is waiting for the owner; call check_access again later`,
  denied: (id) => `request #${id} was denied; do not send it again as is`,
  expired: (id) => `request #${id} expired without a decision; request again if you still need it`,
  discarded: (id) =>
    `request #${id} was discarded when the broker restarted; request again if you still need it`,
};

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/** "at T", or "between T1 and T2" when the items differ. */
function when(times: readonly (string | undefined)[]): string {
  const sorted = [...new Set(times)].sort();
  return sorted.length === 1 ? `${sorted[0]}` : `${sorted[0]} … ${sorted.at(-1)} (see items)`;
}

/**
 * The message of a decided request: what holds now for its granted items (active until,
 * revoked at, expired at), and what to do when nothing of it is usable any more.
 */
function decidedMessage(id: number, state: 'approved' | 'partially_approved', items: ItemStatus[]) {
  const granted = items.filter((it) => it.granted);
  const decided =
    state === 'approved'
      ? `request #${id} was approved`
      : `request #${id} was partially approved (${granted.length} of ${items.length} items)`;
  const group = (s: NonNullable<ItemStatus['grant_state']>) =>
    granted.filter((it) => it.grant_state === s);
  const active = group('active');
  const revoked = group('revoked');
  const expired = group('expired');
  const parts: string[] = [];
  if (active.length > 0)
    parts.push(
      `${plural(active.length, 'item')} active until ${when(active.map((it) => it.expires_at))}`,
    );
  if (revoked.length > 0)
    parts.push(
      `${plural(revoked.length, 'item')} revoked by the owner at ${when(revoked.map((it) => it.ended_at))}`,
    );
  if (expired.length > 0)
    parts.push(
      `${plural(expired.length, 'item')} expired at ${when(expired.map((it) => it.ended_at))}`,
    );
  const now = `now ${parts.join(', ')}`;
  if (active.length === 0) {
    return `${decided}; ${now}: nothing of it is usable, call request_access again if you still need access (grants never renew)`;
  }
  const rest = active.length < items.length ? '; use only the active items' : '';
  return `${decided}; ${now}${rest}`;
}

function renderStatus(status: AccessStatus): Envelope {
  if (status.kind === 'grants') {
    const { grants, pending: waiting } = status;
    const active =
      grants.length === 0 ? 'no active grants' : `${plural(grants.length, 'active grant')}`;
    const next =
      waiting.length > 0
        ? `; ${plural(waiting.length, 'request')} waiting for the owner: ${waiting.map((r) => `#${r.request}`).join(', ')} (call check_access with a request number for its decision)`
        : grants.length === 0
          ? '; call request_access to ask the owner for access'
          : '';
    return ok(`${active}${next}`, {
      grants,
      ...(waiting.length > 0 ? { pending_requests: waiting } : {}),
    });
  }
  const { kind: _kind, ...fields } = status;
  const items = fields.items.map((it) => ({ ...it, holds: holds(it, status.state) }));
  const { state } = status;
  if (state === 'approved' || state === 'partially_approved') {
    return ok(decidedMessage(status.request, state, fields.items), { ...fields, items });
  }
  const message = UNDECIDED_MESSAGES[state](status.request);
  return state === 'pending'
    ? pending(message, { ...fields, items })
    : ok(message, { ...fields, items });
}

export function registerCheckAccess(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'check_access',
    title: 'Check access',
    description:
      'With a request number: the state of that request (status "pending" while the owner has not decided) ' +
      'and, per item, what holds now (active until, revoked at, expired at). Without arguments: your active ' +
      'grants and the requests still waiting for the owner.',
    input: CheckAccessInputSchema,
    output: CheckAccessOutputSchema,
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    handler: (args) => Promise.resolve(answer(deps.requests.status(args), renderStatus)),
  });
}
