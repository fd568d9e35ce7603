/**
 * Which operations an undo takes back, read from the audit log (docs/contracts.md §4,
 * §12.3 of the design): pure, one record at a time (a long log is never held whole).
 *
 * - `undo SEQ`: the operation whose `outcome` (or `intent`) line is SEQ.
 * - `undo --request N`: every operation whose intent relied on a grant of request N and
 *   that changed something, newest first.
 *
 * What an operation changed is what its own lines say: the outcome's `effect` (and a
 * trash's `trash`), with its `path` or `from`/`to`, and `sha256`/`size` of what the
 * broker wrote. A line written before undo existed lacks them: it is listed, and undo
 * says so (`not_undoable`). An operation an earlier undo already took back (an `undo`
 * outcome line with `result` `undone` or `already`, not a dry run) is listed as done.
 * The lines are read with loose schemas: an older broker's, or a field undo does not
 * read, never stops the scan.
 */
import { z } from 'zod';
import { EffectRecordSchema, TrashRecordSchema } from '../../audit/changes.js';
import type { EffectRecord, TrashRecord } from '../../audit/changes.js';
import type { JsonObject } from '../../base/protocol.js';

/** What `undo` was asked to take back. */
export type UndoTarget = { readonly seq: number } | { readonly request: number };

/** What an operation changed, as undo takes it back. */
export type Change =
  | {
      readonly kind: 'upload';
      readonly effect: Extract<EffectRecord, { kind: 'replaced' | 'created' }>;
    }
  | { readonly kind: 'folder'; readonly effect: Extract<EffectRecord, { kind: 'created' }> }
  | { readonly kind: 'move'; readonly effect: Extract<EffectRecord, { kind: 'moved' }> }
  | { readonly kind: 'trash'; readonly trash: TrashRecord }
  | { readonly kind: 'event'; readonly effect: Extract<EffectRecord, { kind: 'event' }> }
  | { readonly kind: 'lock'; readonly effect: Extract<EffectRecord, { kind: 'locked' }> }
  /** It changed something, but its line does not say what (an older broker's). */
  | { readonly kind: 'unrecorded' }
  /** It changed nothing (a read, a refusal). */
  | { readonly kind: 'none' };

/** One operation as its lines recorded it. */
export interface RecordedOperation {
  /** Its outcome line. */
  readonly seq: number;
  readonly tool: string;
  readonly instance: string;
  readonly outcome: string;
  readonly path?: string;
  readonly from?: string;
  readonly to?: string;
  /** What the broker wrote (an upload). */
  readonly sha256?: string;
  readonly size?: number;
  /** A created event's UID (to find it in the calendar trash bin afterwards). */
  readonly uid?: string;
  readonly change: Change;
  /** The undo line that already took it back, if one did. */
  readonly undoneAt?: number;
  /**
   * A write or checkin ticket's record (`undo SEQ` of it): the upload that used the
   * ticket, which is what changed the file; null when no upload on record did.
   */
  readonly upload?: TicketUpload | null;
}

/** The blob upload a ticket allowed: its outcome line (else its intent) and how it ended. */
export interface TicketUpload {
  readonly seq: number;
  /** Its outcome (`ok`: it changed the file); undefined when it has no outcome line. */
  readonly outcome?: string;
}

/** The calls whose answer is an upload ticket: they change nothing, their upload does. */
const TICKETS = new Set(['write', 'checkin']);

export type ScanResult =
  | { readonly ok: true; readonly operations: readonly RecordedOperation[] }
  | {
      readonly ok: false;
      /** `not_operation`: SEQ is no operation's line; `no_such_seq`: the log has none. */
      readonly problem: 'no_such_seq' | 'not_operation';
      readonly event?: string;
    };

const IntentSchema = z.looseObject({
  event: z.literal('intent'),
  seq: z.number(),
  correlation_id: z.string(),
  grants: z.array(z.number()).optional(),
  tool: z.string().optional().catch(undefined),
  /** A blob upload: the call that issued its ticket. */
  ticket_call: z.string().optional().catch(undefined),
  abandon: z.boolean().optional().catch(undefined),
});

const OutcomeSchema = z.looseObject({
  event: z.literal('outcome'),
  seq: z.number(),
  correlation_id: z.string(),
  tool: z.string(),
  instance: z.string(),
  outcome: z.string(),
  path: z.string().optional().catch(undefined),
  from: z.string().optional().catch(undefined),
  to: z.string().optional().catch(undefined),
  sha256: z.string().optional().catch(undefined),
  size: z.number().int().nonnegative().optional().catch(undefined),
  uid: z.string().nullable().optional().catch(undefined),
  effect: EffectRecordSchema.optional().catch(undefined),
  trash: TrashRecordSchema.optional().catch(undefined),
});
type OutcomeLine = z.infer<typeof OutcomeSchema>;

const UndoneSchema = z.looseObject({
  event: z.literal('undo'),
  seq: z.number(),
  undoes: z.number(),
  stage: z.literal('outcome'),
  result: z.enum(['undone', 'already']),
  dry_run: z.undefined().optional(),
});

/** The tools whose success changes something on Nextcloud (the others only read). */
const CHANGING = new Set([
  'blob_put',
  'mkdir',
  'move',
  'trash',
  'calendar_create_event',
  'checkout',
]);

/** What an outcome line says the operation changed. */
export function changeOf(line: OutcomeLine): Change {
  const { tool, effect, trash } = line;
  if (tool === 'trash') {
    // A trash that failed after its rename may have left the item renamed, or trashed.
    if (trash !== undefined && (line.outcome === 'ok' || trash.state !== 'renamed_back'))
      return { kind: 'trash', trash };
    return line.outcome === 'ok' ? { kind: 'unrecorded' } : { kind: 'none' };
  }
  if (line.outcome !== 'ok' || !CHANGING.has(tool)) return { kind: 'none' };
  if (
    tool === 'blob_put' &&
    (effect?.kind === 'replaced' || (effect?.kind === 'created' && effect.what === 'file'))
  )
    return { kind: 'upload', effect };
  if (tool === 'mkdir' && effect?.kind === 'created' && effect.what === 'folder')
    return { kind: 'folder', effect };
  if (tool === 'move' && effect?.kind === 'moved') return { kind: 'move', effect };
  if (tool === 'calendar_create_event' && effect?.kind === 'event')
    return { kind: 'event', effect };
  if (tool === 'checkout' && effect?.kind === 'locked') return { kind: 'lock', effect };
  return { kind: 'unrecorded' };
}

function operationOf(line: OutcomeLine): RecordedOperation {
  return {
    seq: line.seq,
    tool: line.tool,
    instance: line.instance,
    outcome: line.outcome,
    ...(line.path === undefined ? {} : { path: line.path }),
    ...(line.from === undefined ? {} : { from: line.from }),
    ...(line.to === undefined ? {} : { to: line.to }),
    ...(line.sha256 === undefined ? {} : { sha256: line.sha256 }),
    ...(line.size === undefined ? {} : { size: line.size }),
    ...(line.uid === undefined || line.uid === null ? {} : { uid: line.uid }),
    change: changeOf(line),
  };
}

/** Reads a log record by record; `result()` answers what the target names. */
export class UndoScan {
  readonly #target: UndoTarget;
  readonly #requestOf: (grantId: number) => number | undefined;
  /** Intents of interest, by correlation id, until their outcome comes. */
  readonly #waiting = new Set<string>();
  readonly #found: RecordedOperation[] = [];
  /** Operation seq → the undo line that took it back. */
  readonly #undone = new Map<number, number>();
  /** SEQ's own record, when the target is a seq. */
  #at: { event: string } | undefined;
  /** Checkin calls that abandon (no ticket), by correlation id, until their outcome. */
  readonly #abandons = new Set<string>();
  /** When SEQ is a ticket's record: its call, then the upload that used the ticket. */
  #ticketCall: string | undefined;
  #uploadCall: string | undefined;
  #upload: TicketUpload | undefined;

  constructor(target: UndoTarget, requestOf: (grantId: number) => number | undefined) {
    this.#target = target;
    this.#requestOf = requestOf;
  }

  add(record: Readonly<JsonObject>): void {
    const event = record['event'];
    if (event === 'undo') {
      const undone = UndoneSchema.safeParse(record);
      if (undone.success && !this.#undone.has(undone.data.undoes))
        this.#undone.set(undone.data.undoes, undone.data.seq);
      return;
    }
    const target = this.#target;
    if ('seq' in target && record['seq'] === target.seq) this.#at = { event: String(event) };
    if (event === 'intent') this.#intent(record);
    else if (event === 'outcome') this.#outcome(record);
  }

  #intent(record: Readonly<JsonObject>): void {
    const intent = IntentSchema.safeParse(record);
    if (!intent.success) return;
    const { seq, correlation_id: id, grants = [] } = intent.data;
    if (intent.data.tool === 'checkin' && intent.data.abandon === true) this.#abandons.add(id);
    if (
      this.#ticketCall !== undefined &&
      this.#uploadCall === undefined &&
      intent.data.ticket_call === this.#ticketCall
    ) {
      this.#uploadCall = id;
      this.#upload = { seq };
    }
    const target = this.#target;
    const wanted =
      'seq' in target
        ? seq === target.seq
        : grants.some((grant) => this.#requestOf(grant) === target.request);
    if (wanted) this.#waiting.add(id);
  }

  #outcome(record: Readonly<JsonObject>): void {
    const outcome = OutcomeSchema.safeParse(record);
    if (!outcome.success) return;
    const line = outcome.data;
    const abandoned = this.#abandons.delete(line.correlation_id);
    if (line.correlation_id === this.#uploadCall)
      this.#upload = { seq: line.seq, outcome: line.outcome };
    const target = this.#target;
    const mine =
      this.#waiting.delete(line.correlation_id) || ('seq' in target && line.seq === target.seq);
    if (!mine) return;
    // A ticket's record, named by its seq: the upload that used the ticket comes later.
    if ('seq' in target && TICKETS.has(line.tool) && line.outcome === 'ok' && !abandoned)
      this.#ticketCall = line.correlation_id;
    const operation = operationOf(line);
    // Under --request, an operation that changed nothing is not undo's business.
    if ('request' in target && operation.change.kind === 'none') return;
    this.#found.push(operation);
  }

  result(): ScanResult {
    const target = this.#target;
    if ('seq' in target) {
      if (this.#at === undefined) return { ok: false, problem: 'no_such_seq' };
      if (this.#found.length === 0)
        return { ok: false, problem: 'not_operation', event: this.#at.event };
    }
    const operations = this.#found
      .map((op) => {
        const undoneAt = this.#undone.get(op.seq);
        const upload = this.#ticketCall === undefined ? {} : { upload: this.#upload ?? null };
        return { ...op, ...upload, ...(undoneAt === undefined ? {} : { undoneAt }) };
      })
      // Newest first: what came later may stand on what came before.
      .sort((a, b) => b.seq - a.seq);
    return { ok: true, operations };
  }
}
