/**
 * Where reconciliation stands, per Nextcloud account: the last Activity row it read, when
 * that was, and where in the audit log the next read starts. One file in data_dir
 * (`reconcile.json`, 0600), written whole and renamed into place, so that a restart goes
 * on from there and a crash leaves the old cursor or the new, never half of one. The
 * daemon keeps it; `broker reconcile` with the daemon stopped reads and moves it too.
 *
 * Security: the file is parsed with a schema; one that does not parse is set aside
 * (`reconcile.json.unreadable`) and reconciliation starts over from now, which the
 * owner is told, rather than from a value nobody checked.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const RECONCILE_FILE = 'reconcile.json';

export interface Cursor {
  /** The last row read (exclusive start of the next read); null: none yet (the stream was empty). */
  readonly activity: string | null;
  /** When the cursor was set (ms): where a reconciliation after it starts. */
  readonly time: number;
  /** The audit log's byte offset where the next read starts (a line's first byte). */
  readonly auditOffset: number;
  /**
   * Changes already explained by each operation that may still explain one (by
   * correlation id): they count against what it may explain (match.ts `used`).
   */
  readonly used: ReadonlyMap<string, number>;
}

const CursorSchema = z.strictObject({
  activity: z
    .string()
    .regex(/^\d{1,24}$/)
    .nullable(),
  time: z.iso.datetime(),
  audit_offset: z.number().int().nonnegative(),
  used: z.record(z.string().max(200), z.number().int().positive()),
});
const FileSchema = z.strictObject({
  version: z.literal(1),
  accounts: z.record(z.string(), CursorSchema),
});

export type LoadedCursors =
  { ok: true; cursors: Map<string, Cursor> } | { ok: false; problem: string };

export class CursorFile {
  readonly path: string;

  constructor(dataDir: string) {
    this.path = join(dataDir, RECONCILE_FILE);
  }

  /** Every account's cursor; none when the file does not exist yet. */
  load(): LoadedCursors {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        return { ok: true, cursors: new Map() };
      throw error;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const parsed = FileSchema.safeParse(value);
    if (!parsed.success) return { ok: false, problem: `${this.path} is not a cursor file` };
    const cursors = new Map<string, Cursor>();
    for (const [key, c] of Object.entries(parsed.data.accounts))
      cursors.set(key, {
        activity: c.activity,
        time: Date.parse(c.time),
        auditOffset: c.audit_offset,
        used: new Map(Object.entries(c.used)),
      });
    return { ok: true, cursors };
  }

  /** Sets an unreadable file aside, so that the next save starts a new one. */
  setAside(): void {
    renameSync(this.path, `${this.path}.unreadable`);
  }

  /** Writes every cursor (the file is replaced whole, then fsynced). */
  save(cursors: ReadonlyMap<string, Cursor>): void {
    const accounts: Record<string, z.input<typeof CursorSchema>> = {};
    for (const [key, c] of cursors)
      accounts[key] = {
        activity: c.activity,
        time: new Date(c.time).toISOString(),
        audit_offset: c.auditOffset,
        used: Object.fromEntries(c.used),
      };
    const text = `${JSON.stringify({ version: 1, accounts }, null, 2)}\n`;
    const temp = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(temp, 'w', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, this.path);
  }
}
