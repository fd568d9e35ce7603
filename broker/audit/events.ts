/**
 * Every event the audit log records, declared once (docs/contracts.md §4): one zod
 * schema per event in one discriminated union on `event`. The writer (`AuditLog.append`)
 * takes an `AuditEvent`, so a misspelt event name or a missing field fails to compile;
 * every reader (`broker audit verify`, `broker audit tail`) parses a record's event with
 * `AuditEventSchema` through reading.ts, which reports an event it does not know or one
 * missing a field and never fails the chain for it. The schemas name the fields every line
 * of an event carries; an event's other fields (an operation's path or paths, what a
 * verb describes of its value) pass through (`looseObject`), as they always have.
 *
 * The chain owns `seq`, `ts`, `prev` and `hash` (record.ts); they are not part of an
 * event. Adding an event: one schema here and its name in the union; the contracts test
 * (test/audit/events.test.ts) then asks for it in docs/contracts.md.
 */
import { z } from 'zod';

const CountSchema = z.number().int().nonnegative();
/** What a call's lines share: which surface and tool, and the id tying them together. */
const Call = { surface: z.string(), tool: z.string(), correlation_id: z.string() };
const RequestIdSchema = z.number().int().positive();

export const StartEventSchema = z.looseObject({
  event: z.literal('start'),
  version: z.string(),
});

export const StopEventSchema = z.looseObject({ event: z.literal('stop') });

/** `request_access` recorded a request (before the owner sees it). */
export const RequestEventSchema = z.looseObject({
  event: z.literal('request'),
  ...Call,
  request: RequestIdSchema,
  instance: z.string(),
  reason: z.string(),
  items: z.array(
    z.object({ n: CountSchema, kind: z.string(), path: z.string(), mode: z.string() }),
  ),
});

/**
 * A request was decided: by the owner (`actor`, `command`, `outcome`, with `items`,
 * `duration_ms` and `grants` on an approval), or denied by the broker when the approval
 * channel could not deliver it (`decision: "deny"`, `by: "broker"`, `reason`).
 */
export const DecisionEventSchema = z.looseObject({
  event: z.literal('decision'),
  request: RequestIdSchema,
});

/** The owner revoked grants (or a revoke was refused: `outcome: "refused"`, `code`). */
export const RevokeEventSchema = z.looseObject({
  event: z.literal('revoke'),
  actor: z.string(),
  cause: z.string(),
  target: z.unknown(),
  outcome: z.string(),
});

/** Grants (`grants`) or a pending request (`request`, `instance`) reached their time. */
export const ExpireEventSchema = z.looseObject({ event: z.literal('expire') });

/** A request pending when the broker restarted, discarded. */
export const DiscardEventSchema = z.looseObject({
  event: z.literal('discard'),
  request: RequestIdSchema,
  instance: z.string(),
});

/** What every line of an operation carries (intent, outcome, a refusal after the wall). */
export interface CallFields {
  readonly surface: string;
  readonly tool: string;
  readonly instance: string;
  readonly correlation_id: string;
  readonly [field: string]: unknown;
}

/** Written and fsynced before an operation reaches Nextcloud. */
export const IntentEventSchema = z.looseObject({
  event: z.literal('intent'),
  ...Call,
  instance: z.string(),
});

/** How an operation ended (`ok`, `refused`, `error`), with `code` and `cause` when not ok. */
export const OutcomeEventSchema = z.looseObject({
  event: z.literal('outcome'),
  ...Call,
  instance: z.string(),
  outcome: z.string(),
});

/** A refused call (an agent's, or a Matrix sender who is not the approver). */
export const RefusedEventSchema = z.looseObject({
  event: z.literal('refused'),
  surface: z.string(),
});

/** Repeats of one refused call within 60 s, counted on one line. */
export const RefusedSummaryEventSchema = z.looseObject({
  event: z.literal('refused_summary'),
  surface: z.string(),
  tool: z.string(),
  code: z.string(),
  count: CountSchema,
  first: z.string(),
  last: z.string(),
});

/** A failed authentication (never the presented token), `suppressed` counting the unwritten. */
export const AuthFailedEventSchema = z.looseObject({
  event: z.literal('auth_failed'),
  surface: z.string(),
  reason: z.string(),
  remote: z.string().nullable(),
});

/**
 * Ids of requests the broker sent to Nextcloud outside any operation's `outcome` (an
 * answer that came late, a reconciliation that found nothing new), written in batches,
 * or of `broker doctor`'s requests (`source`: `broker` or `doctor`).
 */
export const NcRequestsEventSchema = z.looseObject({
  event: z.literal('nc_requests'),
  instance: z.string(),
  source: z.string(),
  nc_request_ids: z.array(z.string()),
});

/**
 * One reconciliation of an account's Activity against this log (operations/reconcile/):
 * its `instances` (those of the one Nextcloud account), what started it (`trigger`), how
 * many changes were read (`rows`) and how many the broker did not make (`unexplained`,
 * listed in `changes`), with the ids of its own requests.
 */
export const ReconcileEventSchema = z.looseObject({
  event: z.literal('reconcile'),
  instances: z.array(z.string()),
  trigger: z.string(),
  rows: CountSchema,
  unexplained: CountSchema,
});

/** Written by the log itself: a torn tail left in place (`torn`) or a full disk's `outage`. */
export const RecoveryEventSchema = z.looseObject({ event: z.literal('recovery') });

export const AuditEventSchema = z.discriminatedUnion('event', [
  StartEventSchema,
  StopEventSchema,
  RequestEventSchema,
  DecisionEventSchema,
  RevokeEventSchema,
  ExpireEventSchema,
  DiscardEventSchema,
  IntentEventSchema,
  OutcomeEventSchema,
  RefusedEventSchema,
  RefusedSummaryEventSchema,
  AuthFailedEventSchema,
  RecoveryEventSchema,
  NcRequestsEventSchema,
  ReconcileEventSchema,
]);

/** An event as a writer hands it to the log. */
export type AuditEvent = z.input<typeof AuditEventSchema>;
export type AuditEventName = AuditEvent['event'];

/** Every event name, in the order of the union (the contract's list). */
export const AUDIT_EVENT_NAMES: readonly AuditEventName[] = AuditEventSchema.options.map(
  (schema) => schema.shape.event.value,
);
