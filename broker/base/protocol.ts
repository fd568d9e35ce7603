/**
 * What the broker and its CLI say to each other, declared once: the result envelope
 * (docs/contracts.md §5), the ticket a transfer tool answers, the blob endpoint's path and
 * trailers (docs/transfer-protocol.md) and the instance-name rule. The daemon builds
 * these; the CLI reads them.
 *
 * Types and plain constants only, importing nothing: the agent's CLI bundle (cli/client-
 * entry.ts) includes this file, so it loads no schema library and no daemon code.
 */

/**
 * A JSON object whose members are not known until it is read: what arrives from outside
 * (an answer, a request, a record on disk, a parsed document) before it is checked, and
 * what is written as JSON as it comes (a log line's fields). Everything else is typed.
 */
export type JsonObject = Record<string, unknown>;

/** An instance name (config `instances.<name>`, the CLI's `INSTANCE:PATH`). */
export const INSTANCE_NAME = /^[a-z0-9_-]{1,32}$/;

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

/** An envelope whose `code` is one of `Code`. */
export interface EnvelopeOf<Code extends string> {
  status: Status;
  message: string;
  code?: Code;
  retry?: boolean;
  /** On `rate_limited`: whole seconds to wait before calling again. */
  retry_after?: number;
  hint?: string;
  warnings?: string[];
  next?: string;
  correlation_id?: string;
  /** On `grant_revoked` / `grant_expired`: which grant, of which request, ended when, by whom. */
  grant?: number;
  request?: number;
  ended_at?: string;
  ended_by?: 'owner';
  /** On `secret_in_arguments`: the argument that held it (never its value). */
  field?: string;
  [field: string]: unknown;
}

/** The most of an envelope: a client reading it accepts codes a newer or older broker sends. */
export type ReceivedEnvelope = Readonly<EnvelopeOf<EnvelopeCode | (string & {})>>;

/** The envelope every operation answers with. */
export type Envelope = EnvelopeOf<EnvelopeCode>;

/** Where a ticket's bytes are fetched or sent: `blob_url` is this and the ticket id. */
export const BLOB_PATH = '/transfer/blobs/';

/**
 * The blob endpoint's trailers: a finished download's digest and size, or the envelope
 * saying why the broker cut it.
 */
export const BLOB_TRAILERS = {
  sha256: 'x-broker-sha256',
  size: 'x-broker-size',
  envelope: 'x-broker-envelope',
} as const;

/**
 * The blob PUT's request header that declares the body's sha256 (lowercase hex) when the
 * tool that issued the ticket got none: a client may then hash the file while the ticket
 * call is under way. Either way, a body that differs is never committed.
 */
export const BLOB_SHA256_HEADER = 'x-broker-sha256';

/**
 * The blob PUT's request header (value `1`) that says the body's sha256 follows the
 * file's bytes: the body is the file, then its sha256 as 64 lowercase hex digits, and
 * Content-Length is the ticket's size plus 64 (SHA256_AT_END_BYTES). A client may then
 * send the file while it is still hashing it. Only the file's bytes go on to Nextcloud.
 * In the body rather than in an HTTP trailer, which proxies in front of the broker (an
 * nginx that buffers request bodies) drop.
 */
export const BLOB_SHA256_AT_END_HEADER = 'x-broker-sha256-at-end';

/** The bytes of a sha256 declared at the body's end: its 64 hex digits. */
export const SHA256_AT_END_BYTES = 64;

/** A sha256 as the protocol writes it: 64 lowercase hex digits. */
export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A single-use ticket as the transfer tools hand it out. */
export interface TicketView {
  ticket: string;
  blob_url: string;
  expires_at: string;
  expires_in_s: number;
  /** Upload tickets: the header that may declare the body's sha256 (BLOB_SHA256_HEADER). */
  sha256_header?: typeof BLOB_SHA256_HEADER;
  /**
   * Upload tickets: the header that says the body's sha256 follows its last byte instead
   * (BLOB_SHA256_AT_END_HEADER): a client can then send while it is still hashing.
   */
  sha256_at_end?: typeof BLOB_SHA256_AT_END_HEADER;
}
