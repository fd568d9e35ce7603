/**
 * Refused calls in the audit log as counted summaries (docs/contracts.md §4).
 *
 * The first refusal of a kind is written as it always was, its own `refused` line. The
 * same refusal again (same fields but the correlation id: surface, tool, code, instance,
 * path, reason) within SUMMARY_WINDOW_MS of that line gets no line of its own; it is
 * counted, and once the window has closed (the lifecycle sweep) or the broker stops,
 * one `refused_summary` line carries the same fields with `count` (the calls it stands
 * for), `first` and `last` (their times). So every refused call is either a `refused`
 * line or counted in exactly one summary, and a flood of one refusal costs two lines a
 * window.
 *
 * Security: nothing is dropped. A line or summary that cannot be written (the disk is
 * full) stays counted in memory and is written at a later flush. Memory is bounded: past
 * MAX_OPEN_WINDOWS kinds, a refusal is counted under its surface, tool and code alone
 * (`varied: true`), which the few codes and tools bound.
 */
import type { Clock } from '../base/domain.js';
import type { AuditEvent, RefusalFields } from '../audit/events.js';
import { iso } from '../base/time.js';

export const SUMMARY_WINDOW_MS = 60_000;
export const MAX_OPEN_WINDOWS = 1000;

/** The audit fields of one refused call (declared with the event, audit/events.ts). */
export type { RefusalFields } from '../audit/events.js';

interface Window {
  /** The fields every call counted here shares (no correlation id). */
  readonly fields: RefusalFields;
  readonly opened: number;
  count: number;
  first: number;
  last: number;
}

export interface RefusalLedgerDeps {
  readonly now: Clock;
  /** Appends one audit line; false when it could not be written. */
  readonly write: (event: AuditEvent) => Promise<boolean>;
  readonly windowMs?: number;
  readonly maxWindows?: number;
}

export class RefusalLedger {
  readonly #open = new Map<string, Window>();
  /** Windows closed but not yet written (a flush had not come round, or its write failed). */
  #closed = new Map<string, Window>();
  #flushing: Promise<void> = Promise.resolve();

  readonly #deps: RefusalLedgerDeps;

  constructor(deps: RefusalLedgerDeps) {
    this.#deps = deps;
  }

  /** Records one refused call: its own `refused` line, or one more in its window's count. */
  async note(fields: RefusalFields): Promise<void> {
    const now = this.#deps.now();
    const { correlation_id: _id, ...same } = fields;
    let key = keyOf(same);
    let window = this.#open.get(key);
    if (window !== undefined && now - window.opened >= this.#windowMs) {
      // Its window has closed: its summary waits for the next flush; this call opens anew.
      this.#open.delete(key);
      this.#close(key, window);
      window = undefined;
    }
    const held = this.#open.size + this.#closed.size;
    if (window === undefined && held >= (this.#deps.maxWindows ?? MAX_OPEN_WINDOWS)) {
      const coarse = {
        surface: fields.surface,
        tool: fields.tool,
        code: fields.code,
        varied: true,
      };
      key = keyOf(coarse);
      window = this.#open.get(key) ?? this.#opened(key, coarse, now);
    }
    if (window !== undefined) {
      if (window.count === 0) window.first = now;
      window.count += 1;
      window.last = Math.max(window.last, now);
      return;
    }
    const opened = this.#opened(key, same, now);
    if (!(await this.#deps.write({ event: 'refused', ...fields }))) {
      // Security: a line that could not be written is counted in a summary instead.
      if (this.#open.get(key) === opened) {
        opened.first = opened.count === 0 ? now : Math.min(opened.first, now);
        opened.count += 1;
      } else {
        this.#close(key, { fields: same, opened: now, count: 1, first: now, last: now });
      }
    }
  }

  /** Writes the summary of every window open for SUMMARY_WINDOW_MS (all: every window). */
  flush(all = false): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#flush(all));
    return this.#flushing;
  }

  /** Calls counted and not yet written in a summary (tests, and the property). */
  get unwritten(): number {
    let n = 0;
    for (const w of this.#open.values()) n += w.count;
    for (const w of this.#closed.values()) n += w.count;
    return n;
  }

  get #windowMs(): number {
    return this.#deps.windowMs ?? SUMMARY_WINDOW_MS;
  }

  async #flush(all: boolean): Promise<void> {
    const now = this.#deps.now();
    for (const [key, window] of this.#open) {
      if (!all && now - window.opened < this.#windowMs) continue;
      this.#open.delete(key);
      this.#close(key, window);
    }
    const due = [...this.#closed];
    this.#closed.clear();
    for (const [key, window] of due) {
      const written = await this.#deps.write({
        event: 'refused_summary',
        ...window.fields,
        count: window.count,
        first: iso(window.first),
        last: iso(window.last),
      });
      // Security: a summary that could not be written is kept for the next flush.
      if (!written) this.#close(key, window);
    }
  }

  #opened(key: string, fields: RefusalFields, now: number): Window {
    const window: Window = { fields, opened: now, count: 0, first: now, last: now };
    this.#open.set(key, window);
    return window;
  }

  /** Keeps a closed window's calls for the next flush, merged with any of the same kind. */
  #close(key: string, window: Window): void {
    if (window.count === 0) return;
    const held = this.#closed.get(key);
    if (held === undefined) {
      this.#closed.set(key, window);
      return;
    }
    held.count += window.count;
    held.first = Math.min(held.first, window.first);
    held.last = Math.max(held.last, window.last);
  }
}

/** The identity of a refusal: its fields, keys sorted. */
function keyOf(fields: RefusalFields): string {
  return JSON.stringify(fields, (_k, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)))
      : value,
  );
}
