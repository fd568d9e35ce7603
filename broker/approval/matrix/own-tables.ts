/**
 * Tables the Matrix gateway keeps in the grant database, each created by the module
 * that owns it (poll-nonces.ts, counted-messages.ts) rather than by the grant store's
 * migrations: the store never reads them. Their DDL is `CREATE … IF NOT EXISTS` and
 * carries its own rules as triggers (nothing rewritten, nothing deleted); a change to a
 * table is a new table, never an edit of a shipped one.
 */
import type Database from 'better-sqlite3';
import type { Clock } from '../../base/domain.js';
import type { GrantDatabase } from '../../grants/index.js';

export interface OwnTables {
  readonly db: Database.Database;
  /** The broker's clock: every time written comes from it. */
  readonly now: Clock;
}

/** Creates the tables of `ddl` in the grant database when they do not exist yet. */
export function ownTables(database: GrantDatabase, ddl: string): OwnTables {
  database.db.exec(ddl);
  return { db: database.db, now: database.now };
}
