import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { GrantStore, MIGRATIONS } from '../../broker/grants/index.js';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const T0 = Date.UTC(2026, 0, 1);

/** A settable clock. */
export function manualClock(start = T0) {
  let t = start;
  const now = (): number => t;
  return {
    now,
    set: (v: number) => {
      t = v;
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

export function memoryStore(clock = manualClock(), pendingTimeoutMs = 12 * HOUR) {
  const store = GrantStore.open(':memory:', { now: clock.now, pendingTimeoutMs });
  return { store, clock };
}

/**
 * A temporary folder removed by the returned cleanup. On tmpfs when there is one:
 * with synchronous=FULL every commit fsyncs, which is the point in production but
 * only slows the property runs down here.
 */
export function tempDir(): { dir: string; file: string; cleanup: () => void } {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = mkdtempSync(join(base, 'broker-grants-'));
  return {
    dir,
    file: join(dir, 'grants.sqlite'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export const twoItems = {
  instance: 'personal',
  reason: 'summarise the reports',
  items: [
    { path: 'Documents/Reports', mode: 'read' as const },
    { path: 'Documents/Notes/todo.md', mode: 'write' as const },
  ],
};

export const approveAll = {
  kind: 'approve' as const,
  durationMs: DAY,
  maxMs: 7 * DAY,
  by: '@owner:example.org',
};

/**
 * A store on a temporary file that tests can open several times (as several
 * connections, or across a restart). Everything opened is closed, and the file
 * removed, by the cleanups the caller runs after each test.
 */
export function fileStore(cleanups: (() => void)[], clock = manualClock()) {
  const tmp = tempDir();
  const opened: GrantStore[] = [];
  const open = (): GrantStore => {
    const s = GrantStore.open(tmp.file, { now: clock.now, pendingTimeoutMs: 12 * HOUR });
    opened.push(s);
    return s;
  };
  cleanups.push(() => {
    for (const s of opened) s.close();
    tmp.cleanup();
  });
  return { open, clock, file: tmp.file };
}

/**
 * Writes `file` as a broker with only the first `version` migrations left it: one
 * approved request (number 1) whose one item made an active grant (number 1) on
 * `Documents`, decided by `decidedBy`. For the tests of a later migration.
 */
export function writeOldDatabase(
  file: string,
  version: number,
  mode: 'read' | 'write' = 'read',
  decidedBy = '@owner:hs.test',
): void {
  const old = new Database(file);
  for (const sql of MIGRATIONS.slice(0, version)) old.exec(sql);
  old.pragma(`user_version = ${version}`);
  old.exec(`INSERT INTO requests (instance, reason, state, created_at) VALUES ('personal', 'r', 'pending', 0);
    INSERT INTO items VALUES (1, 1, 'Documents', '${mode}');
    UPDATE requests SET state = 'approved', decided_at = 1, decided_by = '${decidedBy}';
    INSERT INTO grants (request_id, item_no, instance, path, mode, state, created_at, expires_at)
      VALUES (1, 1, 'personal', 'Documents', '${mode}', 'active', 1, 99999999999999);`);
  old.close();
}
