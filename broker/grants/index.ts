/** The grant store (docs/contracts.md §3). See store.ts for what it allows and refuses. */
export {
  GrantStore,
  GrantStoreError,
  type DecideRefusal,
  type DecideResult,
  type Decision,
  type GrantStoreDeps,
  type NewRequest,
} from './store.js';
export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { CheckoutLockTable } from './checkout-locks.js';
export type { GrantDatabase } from './database.js';
