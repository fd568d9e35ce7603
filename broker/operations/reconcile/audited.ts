/**
 * What the audit log says the broker did, as reconciliation compares it with Nextcloud's
 * records: each operation (its `intent`, and its `outcome` when written) with its
 * instance, tool, time span, paths, the file ids Nextcloud answered, and every request
 * id the broker recorded (an outcome's `nc_request_ids`, `nc_requests` batches, a
 * reconciliation's own). Pure: it is fed the log's records in order.
 *
 * An operation is open from its intent until its outcome; one the broker never closed
 * (it stopped or crashed in between) ends at the next `start`. An operation whose
 * intent was written is counted whatever its outcome: its requests were sent after the
 * intent was durable, and a failed one may still have changed something on Nextcloud.
 */
import type { JsonObject } from '../../base/protocol.js';

/** Who sent a recorded request. */
export type RequestSource = 'operation' | 'broker' | 'reconcile' | 'doctor';

export interface AuditedOperation {
  readonly correlationId: string;
  readonly instance: string;
  readonly tool: string;
  /** The intent's time (ms). */
  readonly start: number;
  /** The outcome's time, or the next start's; undefined while open. */
  readonly end: number | undefined;
  /** The canonical paths it was on (`path`, or `from` and `to`). */
  readonly paths: readonly string[];
  /** The file ids Nextcloud answered to its requests (`OC-FileId`). */
  readonly fileIds: ReadonlySet<string>;
  /** A calendar event it created (its intent's `uid`, else its outcome's). */
  readonly uid: string | undefined;
  /** The byte offset of its intent in the log (where a later read must start). */
  readonly offset: number;
}

export interface AuditFacts {
  readonly operations: readonly AuditedOperation[];
  /** Every request id recorded (in records at or after `idsFrom`), by who sent it. */
  readonly requestIds: ReadonlyMap<string, RequestSource>;
}

/** An operation while the log is read: its end, file ids and uid are filled in later. */
type Building = Omit<AuditedOperation, 'end' | 'fileIds' | 'uid'> & {
  end: number | undefined;
  fileIds: Set<string>;
  uid: string | undefined;
};

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

function fileIdsOf(record: Readonly<JsonObject>): string[] {
  const files = record['nc_files'];
  if (!Array.isArray(files)) return [];
  return files.flatMap((f: unknown) => {
    const id = text((f as JsonObject | null)?.['file_id']);
    return id === undefined ? [] : [id];
  });
}

function sourceOf(record: Readonly<JsonObject>): RequestSource | undefined {
  switch (record['event']) {
    case 'outcome':
      return 'operation';
    case 'reconcile':
      return 'reconcile';
    case 'nc_requests':
      return record['source'] === 'doctor' ? 'doctor' : 'broker';
    default:
      return undefined;
  }
}

/** Feeds records in log order; `facts()` at the end. */
export class AuditFactsBuilder {
  readonly #operations: Building[] = [];
  /** Open operations by correlation id (a call's lines share it). */
  readonly #open = new Map<string, Building[]>();
  readonly #ids = new Map<string, RequestSource>();
  readonly #idsFrom: number;

  /** `idsFrom`: request ids are kept from records at or after this time (ms). */
  constructor(idsFrom = 0) {
    this.#idsFrom = idsFrom;
  }

  add(record: Readonly<JsonObject>, offset = 0): void {
    const ts = Date.parse(text(record['ts']) ?? '');
    if (!Number.isFinite(ts)) return;
    const event = record['event'];
    if (event === 'start') return this.#closeAll(ts);
    if (event === 'intent') return this.#intent(record, ts, offset);
    if (event === 'outcome') this.#outcome(record, ts);
    const source = sourceOf(record);
    if (source !== undefined && ts >= this.#idsFrom)
      for (const id of strings(record['nc_request_ids'])) this.#ids.set(id, source);
  }

  facts(): AuditFacts {
    return { operations: this.#operations, requestIds: this.#ids };
  }

  #intent(record: Readonly<JsonObject>, ts: number, offset: number): void {
    const correlationId = text(record['correlation_id']);
    const instance = text(record['instance']);
    const tool = text(record['tool']);
    if (correlationId === undefined || instance === undefined || tool === undefined) return;
    const paths = ['path', 'from', 'to'].flatMap((k) => text(record[k]) ?? []);
    const op: Building = {
      correlationId,
      instance,
      tool,
      start: ts,
      end: undefined,
      paths,
      fileIds: new Set(),
      uid: text(record['uid']),
      offset,
    };
    this.#operations.push(op);
    this.#open.set(correlationId, [...(this.#open.get(correlationId) ?? []), op]);
  }

  #outcome(record: Readonly<JsonObject>, ts: number): void {
    const correlationId = text(record['correlation_id']) ?? '';
    const open = this.#open.get(correlationId) ?? [];
    const tool = text(record['tool']);
    const at = open.findIndex((op) => op.tool === tool);
    const op = open[at];
    if (op === undefined) return;
    open.splice(at, 1);
    if (open.length === 0) this.#open.delete(correlationId);
    op.end = ts;
    for (const id of fileIdsOf(record)) op.fileIds.add(id);
    op.uid ??= text(record['uid']);
  }

  /** The broker started again: what it left open ended with it. */
  #closeAll(ts: number): void {
    for (const ops of this.#open.values()) for (const op of ops) op.end = ts;
    this.#open.clear();
  }
}

/**
 * Where the next read of the log can start: at the intent of the first operation that
 * may still explain a change at or after `horizon` (open, or ended since), else at `end`.
 */
export function resumeOffset(facts: AuditFacts, horizon: number, end: number): number {
  let offset = end;
  for (const op of facts.operations)
    if ((op.end === undefined || op.end >= horizon) && op.offset < offset) offset = op.offset;
  return offset;
}
