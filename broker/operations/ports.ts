/**
 * What the pipeline uses of its collaborators: structural interfaces that the real
 * GrantStore, AuditLog and approval gateway satisfy, and the Nextcloud client's own type
 * (type-only, so nothing of those modules is loaded from here).
 */
import type { AuditEvent } from '../audit/events.js';
import type { NextcloudClient } from '../nextcloud/client.js';
import type {
  CheckoutLockEnd,
  CheckoutLockRecord,
  EndedGrantView,
  GrantRecord,
  Kind,
  Mode,
  NewCheckoutLock,
  RequestRecord,
} from '../base/domain.js';

export interface GrantsPort {
  /** Grants in force now: not ended and `now < expiresAt`. */
  activeGrants(): GrantRecord[];
  /** Grants not yet ended, past their expiry or not, frozen (the wall checks expiry). */
  unendedGrants(): readonly GrantRecord[];
  /** The unended grants and the ended ones (revoked or marked expired), both frozen. */
  grantSnapshot(): {
    readonly unended: readonly GrantRecord[];
    readonly ended: readonly (GrantRecord & EndedGrantView)[];
  };
  grant(id: number): GrantRecord | undefined;
  getRequest(id: number): RequestRecord | undefined;
  /** A new pending request, unless `maxPending` already wait; then their ids. */
  createRequestWithin(
    input: {
      instance: string;
      reason: string;
      items: { kind: Kind; path: string; mode: Mode }[];
    },
    maxPending: number,
  ): { ok: true; request: RequestRecord } | { ok: false; pending: number[] };
  /** Requests still marked pending, oldest first (some may be past the timeout). */
  pendingRequests(): RequestRecord[];
  decide(id: number, d: { kind: 'deny'; by: string }): { ok: boolean };
  expirePending(timeoutMs: number): RequestRecord[];
  discardAllPending(): RequestRecord[];
  expireGrants(): GrantRecord[];
}

/** Where checkout locks are kept until Nextcloud confirms their release (grants/checkout-locks.ts). */
export interface CheckoutLocksPort {
  add(lock: NewCheckoutLock): CheckoutLockRecord;
  byToken(token: string): CheckoutLockRecord | undefined;
  /** Marks what must go now (grants ended, LOCK timed out); returns the releases due. */
  due(): CheckoutLockRecord[];
  releaseForGrants(grantIds: readonly number[], end: 'revoked' | 'expired'): CheckoutLockRecord[];
  markReleasing(lockId: number, end: CheckoutLockEnd, error?: string): void;
  attemptFailed(lockId: number, nextAttemptAt: number, error: string): void;
  released(lockId: number, end: CheckoutLockEnd, attempted: boolean): void;
}

export interface AuditPort {
  /** Resolves only once the line is durable; rejects when it cannot be written. */
  append(event: AuditEvent): Promise<unknown>;
}

export interface GatewayPort {
  healthy(): boolean;
  postRequest(request: RequestRecord): Promise<void>;
  /** `html`: the same notice for Matrix's formatted_body. */
  announce(text: string, html?: string): Promise<void>;
}

/** A notice for the owner, plain and HTML (built by broker/approval/format.ts). */
export interface NoticeText {
  plain: string;
  html: string;
}

/**
 * How the broker's own notices to the owner are worded. Injected (the approval layer
 * words them) so agent paths in them are escaped and capped like every other message.
 */
export interface OwnerNotices {
  grantsEnded(grants: readonly GrantRecord[], why: 'expired'): NoticeText;
  requestsEnded(requests: readonly RequestRecord[], why: 'expired' | 'discarded'): NoticeText;
}

/**
 * The Nextcloud verbs the pipeline calls: the client's own methods (broker/nextcloud/
 * client.ts, where each verb is declared once), always called with a canonical path from
 * the wall and the operation's abort signal last (a grant that ends stops the request).
 * A type-only import: operations never load the client; broker/assemble.ts injects it.
 */
export type NextcloudPort = Omit<NextcloudClient, 'name' | 'close'>;
