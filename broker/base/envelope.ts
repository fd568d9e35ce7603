/**
 * The result envelope every operation answers with (docs/contracts.md §5): a `status`, a
 * one-line `message` naming the cause and the next action, and where relevant `code`,
 * `retry`, `hint`, `warnings`, `next`. The pipeline and its verbs build these; the
 * surfaces carry them (an MCP tool as JSON text in `content[0].text` and as
 * `structuredContent`, the blob endpoint as its JSON body).
 */
export const STATUSES = ['ok', 'refused', 'error', 'pending'] as const;
export type Status = (typeof STATUSES)[number];

/** Stable codes a client may branch on. The CLI maps `conflict` to exit 5. */
export type EnvelopeCode =
  // refused: the wall, the grant or the request said no; do not retry as is
  | 'invalid_arguments'
  | 'invalid_path'
  | 'unknown_instance'
  | 'no_grant'
  // a grant covered the path but was revoked by the owner / expired; the envelope says
  // when (`ended_at`), which grant (`grant`, `request`) and, for a revoke, `ended_by`
  | 'grant_revoked'
  | 'grant_expired'
  // sent by brokers before these two existed, for both; this broker no longer sends it
  | 'grant_ended'
  | 'same_path'
  // an argument held a configured secret (a token or password); nothing was recorded or sent
  | 'secret_in_arguments'
  // lifecycle.max_pending requests already wait for the owner
  | 'too_many_pending'
  | 'audit_unavailable'
  | 'unknown_request'
  | 'permission'
  | 'not_found'
  | 'not_a_file'
  | 'not_a_folder'
  | 'conflict'
  | 'locked'
  | 'trash_unavailable'
  | 'insufficient_space'
  | 'locking_unavailable'
  | 'ticket_invalid'
  | 'lock_token_unknown'
  | 'too_large'
  // calendars and address books: a name two collections answer to, or not one of the kind
  | 'collection_ambiguous'
  | 'not_a_collection'
  // error: infrastructure; `retry` says whether trying again later can help
  | 'approval_unavailable'
  | 'nextcloud_unavailable'
  | 'nextcloud_auth'
  | 'nextcloud_error'
  | 'insufficient_storage'
  | 'verification_failed'
  | 'aborted'
  // a calendar Nextcloud fails every query on (an event repeats too often); not retried
  | 'calendar_unreadable'
  // the surface made too many refused calls; `retry_after` says in how many seconds
  | 'rate_limited'
  | 'internal';

export interface Envelope {
  status: Status;
  message: string;
  code?: EnvelopeCode;
  retry?: boolean;
  /** On `rate_limited`: whole seconds to wait before calling again. */
  retry_after?: number;
  hint?: string;
  warnings?: string[];
  next?: string;
  correlation_id?: string;
  [field: string]: unknown;
}

type Extra = Omit<Partial<Envelope>, 'status' | 'message'>;

export function ok(message: string, extra: Extra = {}): Envelope {
  return { status: 'ok', message, ...extra };
}

export function pending(message: string, extra: Extra = {}): Envelope {
  return { status: 'pending', message, ...extra };
}

export function refused(code: EnvelopeCode, message: string, extra: Extra = {}): Envelope {
  return { status: 'refused', message, code, ...extra };
}

export function failure(
  code: EnvelopeCode,
  message: string,
  retry: boolean,
  extra: Extra = {},
): Envelope {
  return { status: 'error', message, code, retry, ...extra };
}

/** The generic answer for anything unexpected: no detail crosses the wire. */
export function internalError(correlationId: string): Envelope {
  return failure(
    'internal',
    `internal error (correlation id ${correlationId}); the operation may not have run, check before retrying`,
    true,
    { correlation_id: correlationId },
  );
}

/** Drops undefined fields so the JSON text and structuredContent are identical. */
export function compact(envelope: Envelope): Envelope {
  const out: Envelope = { status: envelope.status, message: envelope.message };
  for (const [key, value] of Object.entries(envelope)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** Adds warnings (if any) to an envelope. */
export function withWarnings(envelope: Envelope, warnings: readonly string[]): Envelope {
  if (warnings.length === 0) return envelope;
  return { ...envelope, warnings: [...(envelope.warnings ?? []), ...warnings] };
}
