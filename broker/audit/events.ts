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
import { EffectRecordSchema, TrashRecordSchema, UndoFields } from './changes.js';

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

const TimestampSchema = z.string();

/**
 * What an operation was on, as the wall decided it (operations/audit-fields.ts), and
 * the wall operation (`op`; absent on the broker's own clean-up calls).
 */
const OperationTarget = {
  op: z.string().optional(),
  path: z.string().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  kind: z.string().optional(),
  collection: z.string().optional(),
};

/** An intent line's own fields: the grants relied on and what the verb is about to do. */
const IntentFields = {
  grants: z.array(RequestIdSchema),
  discovery: z.boolean().optional(),
  /** A collections listing: the names the wall allowed. */
  collections: z.array(z.string()).optional(),
  /** The broker's own clean-up calls: why, which lock, which try. */
  reason: z.string().optional(),
  lock: RequestIdSchema.optional(),
  attempt: CountSchema.optional(),
  /** An upload: its size, how it may overwrite, the hash its client declared. */
  size: CountSchema.optional(),
  condition: z.enum(['create', 'replace', 'locked']).optional(),
  declared_sha256: z.string().optional(),
  /** An upload whose client declares its sha256 after the file's bytes (BLOB_SHA256_AT_END_HEADER). */
  declared_at_end: z.boolean().optional(),
  abandon: z.boolean().optional(),
  /** A download's If-None-Match (the etag the client holds). */
  if_none_match: z.string().optional(),
  /** A blob upload: whether it writes or checks in (the ticket's kind). */
  kind: z.string().optional(),
  /** A blob upload: the correlation id of the write or checkin call that issued its ticket. */
  ticket_call: z.string().optional(),
  query: z.string().optional(),
  /** A calendar window or a new event's times (ms since the epoch). */
  start: z.number().optional(),
  end: z.number().optional(),
  /** A new event's UID, written before its PUT (reconciliation knows it even if it fails). */
  uid: z.string().optional(),
  include_text: z.boolean().optional(),
  /** A read-only check of a grant (the transfer surface's check_access): nothing is sent. */
  check_only: z.literal(true).optional(),
};

/** An outcome line's own fields: how it ended, and what the verb says of its value. */
const OutcomeFields = {
  outcome: z.enum(['ok', 'refused', 'error', 'pending']),
  code: z.string().optional(),
  reason: z.string().optional(),
  /** How a grant ended under the operation. */
  cause: z.enum(['revoked', 'expired']).optional(),
  grant: RequestIdSchema.optional(),
  request: RequestIdSchema.optional(),
  ended_at: TimestampSchema.optional(),
  ended_by: z.literal('owner').optional(),
  /** A collections listing: the names allowed, or how many were listed. */
  collections: z.union([z.array(z.string()), CountSchema]).optional(),
  missing: CountSchema.optional(),
  entries: CountSchema.optional(),
  results: CountSchema.optional(),
  events: CountSchema.optional(),
  contacts: CountSchema.optional(),
  more: z.boolean().optional(),
  truncated: z.boolean().optional(),
  dropped_outside: CountSchema.optional(),
  /** A file's facts as it stands now (never its content). */
  size: CountSchema.nullable().optional(),
  etag: z.string().nullable().optional(),
  sha256: z.string().optional(),
  unchanged: z.boolean().optional(),
  verified: z.boolean().optional(),
  verified_by: z.string().optional(),
  chunked: z.boolean().optional(),
  unlocked: z.boolean().optional(),
  lock_seconds: CountSchema.optional(),
  released: z.string().optional(),
  /** A created calendar event: its object name, UID and what Nextcloud changed of it. */
  object: z.string().optional(),
  uid: z.string().nullable().optional(),
  changed: z.array(z.string()).optional(),
  /** Nextcloud's answers to the operation's requests (operations/outcome-answers.ts). */
  nc_request_ids: z.array(z.string()).optional(),
  nc_files: z
    .array(
      z.strictObject({
        request_id: z.string(),
        file_id: z.string().optional(),
        etag: z.string().optional(),
      }),
    )
    .optional(),
  nc_requests_unlisted: CountSchema.optional(),
  trash: TrashRecordSchema.optional(),
  effect: EffectRecordSchema.optional(),
};

const OperationCall = { ...Call, instance: z.string(), ...OperationTarget };

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
  outcome: OutcomeFields.outcome,
});

/**
 * An operation's lines as the operations write them: every field they may carry, typed,
 * and no other (a misspelt field fails `tsc`). Readers parse with the loose schemas
 * above, which name what every line carries and let the rest (an older broker's) pass.
 */
export const IntentLineSchema = z.strictObject({
  event: z.literal('intent'),
  ...OperationCall,
  ...IntentFields,
});
export const OutcomeLineSchema = z.strictObject({
  event: z.literal('outcome'),
  ...OperationCall,
  ...OutcomeFields,
});

/**
 * A call the operations refused (operations/refusals.ts): where it came from, why (the
 * code, the reason, an ended grant's facts), and what it asked for in the agent's own
 * spelling (`unknown`: a refused value may be anything). Counted repeats carry the same
 * fields on their `refused_summary` line (refusal-ledger.ts).
 */
const RefusalShape = {
  ...Call,
  correlation_id: Call.correlation_id.optional(),
  code: z.string(),
  reason: z.string().optional(),
  instance: z.unknown().optional(),
  op: z.string().optional(),
  path: z.unknown().optional(),
  from: z.unknown().optional(),
  to: z.unknown().optional(),
  kind: z.unknown().optional(),
  collection: z.unknown().optional(),
  query: z.unknown().optional(),
  /** A request's item that was refused (1-based), or the argument that held a secret. */
  item: CountSchema.optional(),
  field: z.string().optional(),
  grant: RequestIdSchema.optional(),
  request: RequestIdSchema.optional(),
  ended_at: TimestampSchema.optional(),
  ended_by: z.literal('owner').optional(),
  /** too_many_pending: the requests already waiting. */
  pending: z.array(RequestIdSchema).optional(),
  /** rate_limited: the code the call would have had. */
  refused_code: z.string().optional(),
  /** Counted under its surface, tool and code alone (too many kinds were open). */
  varied: z.boolean().optional(),
};

/** A refused line of the agent or transfer surface, as the operations write it. */
export const RefusedLineSchema = z.strictObject({ event: z.literal('refused'), ...RefusalShape });

/** What the operations record of one refused call (the `refused` line without its name). */
export type RefusalFields = z.input<z.ZodObject<typeof RefusalShape>>;

/** What a verb adds to its intent line (RunOptions.intent). */
export type IntentDetail = Partial<Omit<z.input<z.ZodObject<typeof IntentFields>>, 'grants'>>;
/** What a verb says of its value on the outcome line (RunOptions.describe). */
export type OutcomeDetail = Partial<Omit<z.input<z.ZodObject<typeof OutcomeFields>>, 'outcome'>>;
/** What an operation's lines say it was on (operations/audit-fields.ts). */
export type OperationTargetFields = Partial<z.input<z.ZodObject<typeof OperationTarget>>>;

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
 * The approver's pinned devices in an encrypted room (docs/contracts.md §4): a pairing
 * begun on the host (`started`), a `pair CODE` message judged (`claim`, with its
 * `outcome`), a device `pinned` or `unpinned`, and a pairing that ended without a pin
 * (`ended`, with its `outcome`). The code itself is never recorded.
 */
export const PinEventSchema = z.looseObject({
  event: z.literal('pin'),
  action: z.enum(['started', 'claim', 'pinned', 'unpinned', 'ended']),
  actor: z.string(),
});

/**
 * The owner took back an operation (docs/contracts.md §4, `undo`): two lines for each
 * operation an undo considers, tied by `correlation_id`: `stage: "intent"`, written and
 * fsynced before anything is sent, says what undo is about to do (`action`); `stage:
 * "outcome"` what came of it (`result`; `now`, what is there, when it was left as it
 * is) with Nextcloud's answers to undo's own requests (`nc_request_ids`, `nc_files`, as
 * an operation's outcome records them). `undoes` is the `seq` of the operation's outcome
 * line (a record's own `seq` is the chain's).
 */
export const UndoEventSchema = z.looseObject({
  event: z.literal('undo'),
  stage: z.enum(['intent', 'outcome']),
  undoes: RequestIdSchema,
  actor: z.string(),
  correlation_id: z.string(),
});

/** An undo line as undo writes it: every field it may carry, typed, no other. */
export const UndoLineSchema = z.strictObject({
  ...UndoEventSchema.shape,
  ...UndoFields,
  nc_request_ids: OutcomeFields.nc_request_ids,
  nc_files: OutcomeFields.nc_files,
  nc_requests_unlisted: OutcomeFields.nc_requests_unlisted,
});
export type UndoLine = z.input<typeof UndoLineSchema>;

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
  PinEventSchema,
  UndoEventSchema,
  NcRequestsEventSchema,
  ReconcileEventSchema,
]);

/** An event as a reader parses it (reading.ts): what every line of it carries, and the rest. */
export type ReadEvent = z.output<typeof AuditEventSchema>;

/** An event as a writer hands it to the log: an operation's lines exactly as declared. */
export type AuditEvent =
  | Exclude<z.input<typeof AuditEventSchema>, { event: 'intent' | 'outcome' | 'undo' }>
  | z.input<typeof IntentLineSchema>
  | z.input<typeof OutcomeLineSchema>
  | UndoLine;

export type AuditEventName = AuditEvent['event'];

/** Every event name, in the order of the union (the contract's list). */
export const AUDIT_EVENT_NAMES: readonly AuditEventName[] = AuditEventSchema.options.map(
  (schema) => schema.shape.event.value,
);
