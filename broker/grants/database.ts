/**
 * The grant database: one SQLite file (better-sqlite3), WAL journal, `synchronous=FULL`
 * (a decision acknowledged to the owner survives a power cut), foreign keys enforced,
 * migrated to the current schema, with its random store id. The request and grant
 * tables (requests.ts, grant-table.ts) and approval's reaction links share it.
 */
import { closeSync, constants, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Clock } from '../base/domain.js';
import { narrowMode, PRIVATE_FILE_MODE } from '../base/private-files.js';
import { migrate } from './migrations.js';
import { GrantStoreError } from './rows.js';

export interface GrantDatabase {
  readonly db: Database.Database;
  /** The broker's clock: every time written to the database comes from it. */
  readonly now: Clock;
  /**
   * This database's random identity (32 hex digits), made once when it was created or
   * upgraded. Request numbers are unique only within one database; chat messages carry
   * this id too, so a message about another database's request N is never taken for
   * this one's.
   */
  readonly storeId: string;
}

export const isPositiveInt = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

export function invalid(message: string): GrantStoreError {
  return new GrantStoreError('invalid_input', message);
}

/** 16 bytes as lowercase hex: what migration 3 writes. */
const STORE_ID = /^[0-9a-f]{32}$/;

function readStoreId(db: Database.Database): string {
  const row = db.prepare('SELECT store_id FROM store_meta WHERE only_row = 1').get() as
    { store_id?: unknown } | undefined;
  const id = row?.store_id;
  if (typeof id !== 'string' || !STORE_ID.test(id)) {
    throw new GrantStoreError('corrupt', 'the grant database has no valid store id');
  }
  return id;
}

/** The database file and the two SQLite keeps beside it in WAL mode. */
export function databaseFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`];
}

/**
 * Security: the grants and decisions are for the broker's user alone. SQLite creates a
 * new database 0644 (less the umask) and gives `-wal` and `-shm` the database file's
 * mode, so the file is created 0600 before SQLite opens it, and an older, wider one is
 * narrowed (with its `-wal`/`-shm`) first.
 */
function privateFiles(file: string): void {
  // Security: never through a symlink at the path (O_NOFOLLOW).
  closeSync(
    openSync(
      file,
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
      PRIVATE_FILE_MODE,
    ),
  );
  for (const f of databaseFiles(file)) narrowMode(f, PRIVATE_FILE_MODE);
}

/** Opens (creating and migrating if needed) the database at `file`; `:memory:` for tests. */
export function openGrantDatabase(
  file: string,
  deps: { now: Clock; busyTimeoutMs?: number },
): GrantDatabase {
  const onDisk = file !== ':memory:' && file !== '';
  if (onDisk) privateFiles(file);
  const db = new Database(file, { timeout: deps.busyTimeoutMs ?? 5000 });
  try {
    const journal = db.pragma('journal_mode = WAL', { simple: true });
    // Security: durability of decisions; a crash must not lose a revoke the owner saw.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    if (file !== ':memory:' && journal !== 'wal') {
      throw new GrantStoreError(
        'schema',
        `cannot use WAL journalling for ${file} (got ${String(journal)})`,
      );
    }
    if (db.pragma('foreign_keys', { simple: true }) !== 1) {
      throw new GrantStoreError('schema', 'SQLite refused to enforce foreign keys');
    }
    // -wal and -shm exist now; SQLite made them as private as the database file.
    if (onDisk) for (const f of databaseFiles(file)) narrowMode(f, PRIVATE_FILE_MODE);
    try {
      migrate(db);
    } catch (e) {
      if (e instanceof GrantStoreError) throw e;
      throw new GrantStoreError('schema', e instanceof Error ? e.message : String(e), {
        cause: e,
      });
    }
    return { db, now: deps.now, storeId: readStoreId(db) };
  } catch (e) {
    db.close();
    throw e;
  }
}
