/**
 * How every reader of the log (`broker audit verify`, `broker audit tail`) reads a
 * record's event: with the union the writer takes (events.ts), so a reader and the writer
 * share one vocabulary. The chain decides whether a record is intact (record.ts); this
 * only says whether its event is one this version knows and has the fields that event
 * carries. Security: it never decides intact or not, so a line of an older broker or an
 * event a newer one writes never fails a chain check; it is reported, not trusted less.
 */
import { AUDIT_EVENT_NAMES, AuditEventSchema, type ReadEvent } from './events.js';
import type { JsonObject } from '../base/protocol.js';

/** A record's event as this version reads it. */
export type EventReading =
  | { readonly kind: 'known'; readonly event: ReadEvent }
  /** An event name this version does not write: misspelt, or from a newer broker. */
  | { readonly kind: 'unknown'; readonly name: string }
  /** A known event without a field it carries (or with one of another type). */
  | { readonly kind: 'invalid'; readonly name: string; readonly problem: string };

const KNOWN: ReadonlySet<string> = new Set(AUDIT_EVENT_NAMES);

/** Reads the event of a parsed record (the chain's own fields may be present). */
export function readEvent(record: Readonly<JsonObject>): EventReading {
  const name = typeof record.event === 'string' ? record.event : '';
  if (!KNOWN.has(name)) return { kind: 'unknown', name };
  const parsed = AuditEventSchema.safeParse(record);
  if (parsed.success) return { kind: 'known', event: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') ?? '';
  const problem =
    issue === undefined ? 'does not match its schema' : `${field || '(record)'}: ${issue.message}`;
  return { kind: 'invalid', name, problem };
}

/** One record whose event this version does not read as written. */
export interface SchemaFinding {
  readonly seq: number;
  readonly event: string;
  readonly problem: string;
}

/** How many findings a report lists; the count covers them all. */
export const LISTED_FINDINGS = 10;

/** The schema findings of a whole log: how many, and the first few. */
export interface SchemaReport {
  readonly count: number;
  readonly first: readonly SchemaFinding[];
}

/** Collects findings record by record (a log can be long: only the first few are kept). */
export class SchemaFindings {
  #count = 0;
  readonly #first: SchemaFinding[] = [];

  add(seq: number, record: Readonly<JsonObject>): void {
    const reading = readEvent(record);
    if (reading.kind === 'known') return;
    this.#count += 1;
    if (this.#first.length >= LISTED_FINDINGS) return;
    this.#first.push({
      seq,
      event: reading.name,
      problem:
        reading.kind === 'unknown'
          ? 'an event this version does not know (misspelt, or written by a newer broker)'
          : reading.problem,
    });
  }

  report(): SchemaReport {
    return { count: this.#count, first: [...this.#first] };
  }
}
