/**
 * What the operations use of their collaborators, each the implementation's own type:
 * the grant store's and the checkout-lock table's verbs (`Pick<>`), the audit log's
 * `append`, the Nextcloud client's verbs (type-only, so nothing of those modules is
 * loaded from here); and the approval gateway's part, declared here because the
 * approval plane sits above the operations and implements it.
 */
import type { GrantRecord, RequestRecord } from '../base/domain.js';
import type { CheckoutLockTable } from '../grants/checkout-locks.js';
import type { GrantStore } from '../grants/store.js';
import type { NextcloudClient } from '../nextcloud/client.js';

/** What the operations use of the grant store (broker/grants/store.ts), as it declares it. */
export type GrantsPort = Pick<
  GrantStore,
  | 'activeGrants'
  | 'unendedGrants'
  | 'grantSnapshot'
  | 'grant'
  | 'getRequest'
  | 'createRequestWithin'
  | 'pendingRequests'
  | 'decide'
  | 'expirePending'
  | 'discardAllPending'
  | 'expireGrants'
>;

/** Where checkout locks are kept until Nextcloud confirms their release (grants/checkout-locks.ts). */
export type CheckoutLocksPort = Pick<
  CheckoutLockTable,
  | 'add'
  | 'byToken'
  | 'byId'
  | 'due'
  | 'releaseForGrants'
  | 'markReleasing'
  | 'attemptFailed'
  | 'released'
>;

/**
 * The approval plane as the operations use it: somewhere to post requests and
 * announcements, and a health flag (`request_access` answers `approval_unavailable`
 * while it is unhealthy; existing grants keep working). Every gateway implements it
 * (broker/approval/gateway.ts adds its start and stop).
 */
export interface GatewayPort {
  /** False => request_access answers error. */
  healthy(): boolean;
  /** Shows a new request to the approver. Throws ApprovalUnavailableError. */
  postRequest(request: RequestRecord): Promise<void>;
  /**
   * A notice to the approver (expiries, revokes by the system). `html`: the same
   * notice for Matrix `formatted_body` (see approval/format.ts); others may ignore it.
   */
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
