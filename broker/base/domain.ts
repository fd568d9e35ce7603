/**
 * Domain types shared by the wall, the grant store, the approval plane and the
 * pipeline. Times are milliseconds since the Unix epoch on the broker's clock,
 * always passed in (never read from `Date.now()` in domain code).
 */

import type { Kind, Mode } from './kinds.js';

// What a grant allows and what it is on: declared with the table of kinds.
export type { CollectionKind, Kind, Mode } from './kinds.js';

/** The part of a grant the wall decides on. */
export interface GrantView {
  readonly id: number;
  readonly requestId: number;
  readonly instance: string;
  /**
   * Absent only on views made before kinds existed, which are files grants; the store
   * always sets it. Anything but these three values covers nothing.
   */
  readonly kind?: Kind;
  /** Canonical path (see `canonicalPath`), never empty; one component for a collection. */
  readonly path: string;
  readonly mode: Mode;
  /** Allowed only while `now < expiresAt`. */
  readonly expiresAt: number;
}

/**
 * A grant that ended, as the wall reads it to say why nothing allows an operation: an
 * ended grant never allows anything.
 */
export interface EndedGrantView extends GrantView {
  readonly state: 'revoked' | 'expired';
  /** When the broker recorded the end (for `revoked`, the revoke's instant). */
  readonly endedAt: number;
}

export type RequestState =
  'pending' | 'approved' | 'partially_approved' | 'denied' | 'expired' | 'discarded';

export type GrantState = 'active' | 'expired' | 'revoked';

export interface RequestItem {
  /** 1-based item number shown to the owner. */
  readonly n: number;
  readonly kind: Kind;
  readonly path: string;
  readonly mode: Mode;
  /** The grant made from this item, when it was approved. */
  readonly grant: GrantRecord | null;
}

export interface RequestRecord {
  readonly id: number;
  readonly instance: string;
  readonly reason: string;
  readonly state: RequestState;
  readonly createdAt: number;
  readonly decidedAt: number | null;
  /** Who decided (a Matrix ID, or `console`), when decided. */
  readonly decidedBy: string | null;
  readonly items: readonly RequestItem[];
}

export interface GrantRecord extends GrantView {
  readonly kind: Kind;
  /** The request item number this grant was made from. */
  readonly itemNo: number;
  readonly state: GrantState;
  readonly createdAt: number;
  readonly endedAt: number | null;
}

/** A clock: milliseconds since the epoch. Injected everywhere. */
export type Clock = () => number;

/**
 * A checkout's lock on Nextcloud, as the broker keeps it until Nextcloud confirms it is
 * gone: `held` while the checkout stands, `releasing` once it must go (its grant ended,
 * the checkin's own release failed, its LOCK timed out) and the release has not been
 * confirmed yet, `released` once Nextcloud showed the token no longer holds the file.
 */
export type CheckoutLockState = 'held' | 'releasing' | 'released';

/** Why a checkout lock is being released (or was). */
export type CheckoutLockEnd =
  'checkin' | 'abandon' | 'revoked' | 'expired' | 'timed_out' | 'not_taken' | 'checkout_failed';

/** A checkout lock as it is recorded when Nextcloud answered the LOCK. */
export interface NewCheckoutLock {
  readonly instance: string;
  readonly path: string;
  readonly token: string;
  readonly grantIds: readonly number[];
  readonly lockedAt: number;
  readonly lockExpiresAt: number;
}

export interface CheckoutLockRecord {
  readonly id: number;
  readonly instance: string;
  /** Canonical path, as the wall returned it at checkout. */
  readonly path: string;
  /** The Nextcloud lock token (`opaquelocktoken:…`): needed to UNLOCK after a restart. */
  readonly token: string;
  /** The grants that allowed the checkout; the lock goes when any of them ends. */
  readonly grantIds: readonly number[];
  /** The requests those grants came from (what the owner revokes). */
  readonly requestIds: readonly number[];
  readonly lockedAt: number;
  /** When the LOCK's own timeout runs out on Nextcloud. */
  readonly lockExpiresAt: number;
  readonly state: CheckoutLockState;
  readonly end: CheckoutLockEnd | null;
  /** Release attempts so far (each one audited). */
  readonly attempts: number;
  /** When the next release attempt is due (releasing only). */
  readonly nextAttemptAt: number | null;
  /** Why the last attempt failed: a short, scrubbed line. */
  readonly lastError: string | null;
  readonly releasedAt: number | null;
}
