/**
 * The grant store: access requests, the owner's decisions on them, and the grants
 * those decisions made (docs/contracts.md §3), in one SQLite database (database.ts). The parts:
 * requests.ts (requests and the decide-once rule), grant-table.ts (grants, their
 * snapshot for the wall, expiry and revokes), checkout-locks.ts (the checkout locks the
 * grants allowed, until Nextcloud confirms their release); this class puts them behind
 * one door.
 *
 * What it allows and refuses:
 * - A request is decided once. The decision is an atomic
 *   `UPDATE requests … WHERE id = ? AND state = 'pending'` that must change exactly one
 *   row, in one transaction with the grant rows, so two approvers, two connections or a
 *   retried message can never decide twice or grant from a denied request.
 * - A pending request older than the pending timeout cannot be approved, even before
 *   the sweeper marked it expired; a discarded request (broker restarted) neither.
 * - A grant is active only while `state = 'active'` and `now < expiresAt`; once revoked
 *   or marked expired it never comes back (the schema's triggers refuse it too), even
 *   if the clock goes backwards. Expiry counts from the broker's clock at approval.
 */
import type { CheckoutLockRecord, Clock, GrantRecord, RequestRecord } from '../base/domain.js';
import { CheckoutLockTable } from './checkout-locks.js';
import { invalid, isPositiveInt, openGrantDatabase, type GrantDatabase } from './database.js';
import { GrantTable, type GrantSnapshot } from './grant-table.js';
import {
  RequestTable,
  type CreateResult,
  type DecideResult,
  type Decision,
  type NewRequest,
} from './requests.js';

export { GrantStoreError } from './rows.js';
export type { EndedGrantRecord, GrantSnapshot } from './grant-table.js';
export type {
  CreateResult,
  DecideRefusal,
  DecideResult,
  Decision,
  NewRequest,
} from './requests.js';

export interface GrantStoreDeps {
  now: Clock;
  /**
   * A pending request at least this old (ms) is expired: `decide` refuses it and marks
   * it. Pass `lifecycle.pending_timeout` from the config. Default: 12 h (docs/contracts.md §3).
   */
  pendingTimeoutMs?: number;
  /** How long to wait (ms) for another connection's write to finish. Default 5000. */
  busyTimeoutMs?: number;
}

const DEFAULT_PENDING_TIMEOUT_MS = 12 * 3_600_000;

export class GrantStore {
  /** This database's random identity (see GrantDatabase.storeId). */
  readonly storeId: string;
  /**
   * The open database, for the tables other modules keep in the same file (approval's
   * reaction links). The schema's triggers hold whoever writes.
   */
  readonly database: GrantDatabase;
  /** The checkout locks held on Nextcloud under these grants (operations releases them). */
  readonly checkoutLocks: CheckoutLockTable;
  readonly #requests: RequestTable;
  readonly #grants: GrantTable;

  private constructor(database: GrantDatabase, pendingTimeoutMs: number) {
    this.database = database;
    this.storeId = database.storeId;
    this.#requests = new RequestTable(database, pendingTimeoutMs);
    this.#grants = new GrantTable(database);
    this.checkoutLocks = new CheckoutLockTable(database);
  }

  /** Opens (creating and migrating if needed) the database at `file`; `:memory:` for tests. */
  static open(file: string, deps: GrantStoreDeps): GrantStore {
    if (deps.pendingTimeoutMs !== undefined && !isPositiveInt(deps.pendingTimeoutMs)) {
      throw invalid('pendingTimeoutMs must be a positive whole number of milliseconds');
    }
    const database = openGrantDatabase(file, {
      now: deps.now,
      ...(deps.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: deps.busyTimeoutMs }),
    });
    return new GrantStore(database, deps.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS);
  }

  close(): void {
    if (this.database.db.open) this.database.db.close();
  }

  // ---- requests (requests.ts) ------------------------------------------------------

  /** Records a pending request; items are numbered 1… in the order given. */
  createRequest(input: NewRequest): RequestRecord {
    return this.#requests.createRequest(input);
  }

  /**
   * Records a pending request unless `maxPending` requests already wait for the owner
   * (any instance); then answers their ids. One transaction: never more than the limit.
   */
  createRequestWithin(input: NewRequest, maxPending: number): CreateResult {
    return this.#requests.createRequestWithin(input, maxPending);
  }

  getRequest(id: number): RequestRecord | undefined {
    return this.#requests.getRequest(id);
  }

  /** Requests still marked pending, oldest first (some may be past the timeout). */
  pendingRequests(): RequestRecord[] {
    return this.#requests.pendingRequests();
  }

  /** Approves all or some items of a pending request, or denies it; once per request. */
  decide(id: number, d: Decision): DecideResult {
    return this.#requests.decide(id, d);
  }

  /** Marks pending requests at least `timeoutMs` old as expired and returns them. */
  expirePending(timeoutMs: number): RequestRecord[] {
    return this.#requests.expirePending(timeoutMs);
  }

  /** On start: every pending request is discarded (silence grants nothing). */
  discardAllPending(): RequestRecord[] {
    return this.#requests.discardAllPending();
  }

  // ---- grants (grant-table.ts) -----------------------------------------------------

  grant(id: number): GrantRecord | undefined {
    return this.#grants.grant(id);
  }

  /** Grants not yet revoked or marked expired, past their expiry or not: the wall's snapshot. */
  unendedGrants(): readonly GrantRecord[] {
    return this.#grants.unendedGrants();
  }

  /** The unended grants and the ended ones, frozen, under one version check (for the wall). */
  grantSnapshot(): GrantSnapshot {
    return this.#grants.grantSnapshot();
  }

  /** Grants in force now: not ended and `now < expiresAt` (the expiry instant is out). */
  activeGrants(): GrantRecord[] {
    return this.#grants.activeGrants();
  }

  /** Marks active grants at or past their expiry as expired; returns them (to announce, unlock). */
  expireGrants(): GrantRecord[] {
    return this.#grants.expireGrants();
  }

  revokeRequest(id: number): GrantRecord[] {
    return this.#grants.revokeRequest(id);
  }

  revokeInstance(name: string): GrantRecord[] {
    return this.#grants.revokeInstance(name);
  }

  revokeAll(): GrantRecord[] {
    return this.#grants.revokeAll();
  }

  revokeGrants(ids: number[]): GrantRecord[] {
    return this.#grants.revokeGrants(ids);
  }

  // ---- checkout locks (checkout-locks.ts) --------------------------------------------

  /** Checkout locks not yet confirmed released, oldest first (for `status`). */
  openCheckoutLocks(): CheckoutLockRecord[] {
    return this.checkoutLocks.open();
  }
}
