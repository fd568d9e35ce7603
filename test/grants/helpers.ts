import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrantStore } from '../../broker/grants/index.js';

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
