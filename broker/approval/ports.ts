/**
 * What the approval engine uses of the layers below it: the grant store and the audit
 * log (the real classes satisfy these), and the owner's lifecycle policy.
 */
import type { CheckoutLockRecord, GrantRecord, RequestRecord } from '../base/domain.js';
import type { AuditSink } from '../audit/sink.js';
import type { GrantDatabase } from '../grants/index.js';
import type { DecideRefusalCode } from './refusals.js';

/** What the engine uses of broker/grants' GrantStore (the real class satisfies it). */
export interface ApprovalStore {
  /**
   * Optional (the real store has it): the database's random identity. Chat messages
   * carry it next to the request number; see `ApprovalEngine.storeId`.
   */
  readonly storeId?: string;
  getRequest(id: number): RequestRecord | undefined;
  decide(
    id: number,
    d:
      | { kind: 'approve'; items?: number[]; durationMs: number; maxMs: number; by: string }
      | { kind: 'deny'; by: string },
  ):
    | { ok: true; request: RequestRecord; granted: GrantRecord[] }
    | { ok: false; code: DecideRefusalCode; message: string };
  activeGrants(): GrantRecord[];
  revokeRequest(id: number): GrantRecord[];
  revokeInstance(name: string): GrantRecord[];
  revokeAll(): GrantRecord[];
  revokeGrants(ids: number[]): GrantRecord[];
  /** Optional: pending requests, oldest first, for `status`. */
  pendingRequests?(): RequestRecord[];
  /** Optional: checkout locks not yet confirmed released, for `status`. */
  openCheckoutLocks?(): readonly CheckoutLockRecord[];
  /**
   * Optional (the real store has it): the SQLite database, where the reaction links
   * persist (reaction-links.ts), so a withdrawn 👍 is honoured after a restart.
   * Without it the engine remembers them in memory.
   */
  readonly database?: GrantDatabase;
}

/** A chat reaction event, and the room it is in (the gateway fills it in). */
export interface ReactionRef {
  eventId: string;
  roomId: string;
}

/** What the engine uses of broker/audit's AuditLog: its one append port. */
export type ApprovalAudit = AuditSink;

export interface LifecyclePolicy {
  /** A pending request older than this is expired: it can no longer be decided. */
  pending_timeout: number;
  default_grant: number;
  max_grant: number;
  /** How many requests may wait at once (shown in help). */
  max_pending?: number | undefined;
}
