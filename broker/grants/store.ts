/**
 * The grant store: access requests, the owner's decisions on them, and the grants
 * those decisions made (docs/contracts.md §3), in one SQLite database (database.ts). The parts:
 * requests.ts (requests and the decide-once rule), grant-table.ts (grants, their
 * snapshot for the wall, expiry and revokes), checkout-locks.ts (the checkout locks the
 * grants allowed, until Nextcloud confirms their release); the store puts them behind
 * one door, offering each table's verbs as the table declares them.
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
import type { CheckoutLockRecord, Clock } from '../base/domain.js';
import { CheckoutLockTable } from './checkout-locks.js';
import { invalid, isPositiveInt, openGrantDatabase, type GrantDatabase } from './database.js';
import { GrantTable } from './grant-table.js';
import { RequestTable } from './requests.js';

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

/** The request table's verbs the store offers (requests.ts declares each). */
const REQUEST_VERBS = [
  'createRequest',
  'createRequestWithin',
  'getRequest',
  'pendingRequests',
  'decide',
  'expirePending',
  'discardAllPending',
] as const satisfies readonly (keyof RequestTable)[];

/** The grant table's verbs the store offers (grant-table.ts declares each). */
const GRANT_VERBS = [
  'grant',
  'unendedGrants',
  'grantSnapshot',
  'activeGrants',
  'expireGrants',
  'revokeRequest',
  'revokeInstance',
  'revokeAll',
  'revokeGrants',
] as const satisfies readonly (keyof GrantTable)[];

/** `names` of `table`, each bound to it. */
function verbsOf<T extends object, K extends keyof T>(table: T, names: readonly K[]): Pick<T, K> {
  const verbs: Partial<Pick<T, K>> = {};
  for (const name of names) {
    const verb = table[name];
    if (typeof verb !== 'function') throw new Error(`grant store: ${String(name)} is not a verb`);
    verbs[name] = verb.bind(table) as T[K];
  }
  return verbs as Pick<T, K>;
}

export type GrantStore = Pick<RequestTable, (typeof REQUEST_VERBS)[number]> &
  Pick<GrantTable, (typeof GRANT_VERBS)[number]> & {
    /** This database's random identity (see GrantDatabase.storeId). */
    readonly storeId: string;
    /**
     * The open database, for the tables other modules keep in the same file (approval's
     * reaction links). The schema's triggers hold whoever writes.
     */
    readonly database: GrantDatabase;
    /** The checkout locks held on Nextcloud under these grants (operations releases them). */
    readonly checkoutLocks: CheckoutLockTable;
    /** Checkout locks not yet confirmed released, oldest first (for `status`). */
    openCheckoutLocks(): CheckoutLockRecord[];
    close(): void;
  };

export const GrantStore = {
  /** Opens (creating and migrating if needed) the database at `file`; `:memory:` for tests. */
  open(file: string, deps: GrantStoreDeps): GrantStore {
    if (deps.pendingTimeoutMs !== undefined && !isPositiveInt(deps.pendingTimeoutMs)) {
      throw invalid('pendingTimeoutMs must be a positive whole number of milliseconds');
    }
    const database = openGrantDatabase(file, {
      now: deps.now,
      ...(deps.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: deps.busyTimeoutMs }),
    });
    const checkoutLocks = new CheckoutLockTable(database);
    return {
      ...verbsOf(
        new RequestTable(database, deps.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS),
        REQUEST_VERBS,
      ),
      ...verbsOf(new GrantTable(database), GRANT_VERBS),
      storeId: database.storeId,
      database,
      checkoutLocks,
      openCheckoutLocks: () => checkoutLocks.open(),
      close: () => {
        if (database.db.open) database.db.close();
      },
    };
  },
};
