/**
 * The grant database's identity (migration 3): request numbers restart at 1 in a new
 * database, so chat messages carry the store id too. Each database gets its own random
 * id once, keeps it across restarts, and nothing can rewrite or remove it.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../broker/grants/index.js';
import {
  approveAll,
  fileStore as tempFileStore,
  memoryStore,
  twoItems,
  writeOldDatabase,
} from './helpers.js';

const HEX32 = /^[0-9a-f]{32}$/;

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

function fileStore() {
  const base = tempFileStore(cleanups);
  const raw = () => {
    const db = new Database(base.file);
    cleanups.unshift(() => db.close());
    return db;
  };
  return { ...base, raw };
}

describe('the store id', () => {
  it('is 16 random bytes in hex, different for every new database', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const { store } = memoryStore();
      expect(store.storeId).toMatch(HEX32);
      ids.add(store.storeId);
      store.close();
    }
    expect(ids.size).toBe(20);
  });

  it('stays the same when the same database is opened again (a normal restart)', () => {
    const { open } = fileStore();
    const first = open();
    const id = first.storeId;
    first.close();
    expect(open().storeId).toBe(id);
  });
});

describe('attack: replacing the grant database to reuse request numbers', () => {
  it('a new database numbers its requests from 1 again, under a different store id', () => {
    const a = fileStore();
    const b = fileStore();
    const old = a.open();
    const fresh = b.open();
    expect(old.createRequest(twoItems).id).toBe(fresh.createRequest(twoItems).id);
    expect(fresh.storeId).not.toBe(old.storeId);
  });

  it('the id cannot be rewritten, removed or joined by a second row', () => {
    const { open, raw } = fileStore();
    const id = open().storeId;
    const db = raw();
    expect(() => db.exec(`UPDATE store_meta SET store_id = '${'0'.repeat(32)}'`)).toThrow(
      /never rewritten/,
    );
    expect(() => db.exec('DELETE FROM store_meta')).toThrow(/never deleted/);
    expect(() =>
      db.exec(`INSERT INTO store_meta (only_row, store_id) VALUES (2, '${'1'.repeat(32)}')`),
    ).toThrow(/CHECK constraint/);
    expect(() =>
      db.exec(`INSERT INTO store_meta (only_row, store_id) VALUES (1, '${'1'.repeat(32)}')`),
    ).toThrow(/UNIQUE constraint/);
    expect(db.prepare('SELECT store_id FROM store_meta').all()).toEqual([{ store_id: id }]);
  });

  it('a database whose id was tampered with stops the store instead of being trusted', () => {
    const { open, raw } = fileStore();
    open().close();
    const db = raw();
    db.exec('DROP TRIGGER store_meta_fixed');
    db.pragma('ignore_check_constraints = ON');
    db.exec(`UPDATE store_meta SET store_id = 'not-hex'`);
    db.close();
    expect(() => open()).toThrow(/no valid store id/);
  });
});

describe('migration 3', () => {
  it('gives a database from the previous broker an id, keeping its grants', () => {
    const { open, file } = fileStore();
    writeOldDatabase(file, 2);
    const upgraded = open();
    expect(upgraded.storeId).toMatch(HEX32);
    expect(upgraded.grant(1)?.state).toBe('active');
    // Numbering continues in the upgraded database: it is the same database.
    const r = upgraded.createRequest(twoItems);
    expect(r.id).toBe(2);
    expect(upgraded.decide(r.id, approveAll).ok).toBe(true);
    const id = upgraded.storeId;
    upgraded.close();
    const again = open();
    expect(again.storeId).toBe(id);
    expect(again.activeGrants().map((g) => g.requestId)).toEqual([1, 2, 2]);
    const check = new Database(file, { readonly: true });
    cleanups.unshift(() => check.close());
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
  });
});
