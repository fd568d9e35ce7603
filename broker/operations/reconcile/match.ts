/**
 * The reconciliation's one decision, pure: which of the account's own changes that
 * Nextcloud recorded (Activity rows, changes.ts) an operation in the audit log explains
 * (audited.ts), and which nothing explains (docs/contracts.md "broker reconcile").
 *
 * A change is explained by an operation of the same account when all three hold:
 * - **kind**: the operation's tool makes that kind of change (TOOL_CHANGES: a `move`
 *   explains a move, never a delete; a read explains nothing);
 * - **target**: the change's file id is one Nextcloud answered to the operation, or
 *   every path the change names is one of the operation's paths; a calendar event's
 *   UID is the one the operation created;
 * - **time**: the change lies within the operation's span (intent to outcome; an open
 *   operation until now), widened by `toleranceMs` for the two clocks and Nextcloud's
 *   whole seconds.
 *
 * Each operation explains at most as many changes as its tool can make (one upload is
 * one change; a trash under a unique name is a rename and a delete, and a rename back
 * when the delete fails), counting those it explained in earlier passes (`used`): a
 * second change of the same file in the same moments is not hidden behind the broker's. The changes are assigned to operations as a maximum
 * matching (augmenting paths), so the order in which they are read changes nothing.
 *
 * Security: everything else the account did is `unexplained`: a change by anyone using
 * the broker's app password (or the account's login) outside the broker.
 */
import type { AuditedOperation } from './audited.js';
import type { Change, ChangeKind } from './changes.js';

export interface ToolChanges {
  readonly kinds: ReadonlySet<ChangeKind>;
  /** The most changes one operation of the tool makes. */
  readonly most: number;
}

/**
 * What each tool that changes something on Nextcloud can change (the audit's `tool`):
 * the agent's `mkdir`, `move`, `trash` and `calendar_create_event`, and `blob_put`, the
 * upload of a `write` or `checkin` ticket. Every other tool reads, locks or lists, which
 * the Activity app does not record.
 */
export const TOOL_CHANGES: ReadonlyMap<string, ToolChanges> = new Map([
  ['mkdir', { kinds: new Set<ChangeKind>(['created']), most: 1 }],
  ['move', { kinds: new Set<ChangeKind>(['moved']), most: 1 }],
  ['trash', { kinds: new Set<ChangeKind>(['deleted', 'moved']), most: 3 }],
  ['blob_put', { kinds: new Set<ChangeKind>(['created', 'changed']), most: 1 }],
  ['calendar_create_event', { kinds: new Set<ChangeKind>(['event']), most: 1 }],
]);

export interface MatchOptions {
  /** How far a change may lie outside an operation's span (clocks, whole seconds). */
  readonly toleranceMs: number;
  /** Where an open operation's span ends. */
  readonly now: number;
  /**
   * Changes each operation (by correlation id) already explained in an earlier pass:
   * they count against its `most`, so no operation explains more across passes than in one.
   */
  readonly used?: ReadonlyMap<string, number>;
}

export interface Matching {
  /** Each explained change with the correlation id of the operation that explains it. */
  readonly explained: readonly { readonly change: Change; readonly by: string }[];
  readonly unexplained: readonly Change[];
}

/** Nextcloud writes whole seconds: a change may read up to a second before its request. */
const SECOND_MS = 1000;

function onTarget(op: AuditedOperation, change: Change): boolean {
  if (change.kind === 'event') return op.uid !== undefined && op.uid === change.uid;
  if (change.fileId !== undefined && op.fileIds.has(change.fileId)) return true;
  const paths = change.oldPath === undefined ? [change.path] : [change.path, change.oldPath];
  return paths.every((p) => p !== '' && op.paths.includes(p));
}

/** Whether `op` could have made `change` (see the top of this file). */
export function canExplain(op: AuditedOperation, change: Change, options: MatchOptions): boolean {
  const spec = TOOL_CHANGES.get(op.tool);
  if (spec === undefined || !spec.kinds.has(change.kind)) return false;
  const from = op.start - SECOND_MS - options.toleranceMs;
  const to = (op.end ?? options.now) + options.toleranceMs;
  return change.time >= from && change.time <= to && onTarget(op, change);
}

/** Assigns changes to operations (at most `most` each); the rest are unexplained. */
export function matchChanges(
  changes: readonly Change[],
  operations: readonly AuditedOperation[],
  options: MatchOptions,
): Matching {
  const candidates = changes.map((change) =>
    operations.flatMap((op, i) => (canExplain(op, change, options) ? [i] : [])),
  );
  const holders: number[][] = operations.map(() => []);
  const capacity = (i: number): number => {
    const op = operations[i];
    if (op === undefined) return 0;
    const most = TOOL_CHANGES.get(op.tool)?.most ?? 0;
    return most - (options.used?.get(op.correlationId) ?? 0);
  };
  // Kuhn's augmenting paths, with each operation holding up to its capacity.
  const assign = (c: number, seen: Set<number>): boolean => {
    for (const o of candidates[c] ?? []) {
      if (seen.has(o)) continue;
      seen.add(o);
      const held = holders[o] ?? [];
      if (held.length < capacity(o)) {
        held.push(c);
        return true;
      }
      for (let k = 0; k < held.length; k++) {
        if (assign(held[k] ?? -1, seen)) {
          held[k] = c;
          return true;
        }
      }
    }
    return false;
  };
  const by = new Map<number, string>();
  changes.forEach((_, c) => assign(c, new Set()));
  holders.forEach((held, o) => {
    for (const c of held) by.set(c, operations[o]?.correlationId ?? '');
  });
  const explained: { change: Change; by: string }[] = [];
  const unexplained: Change[] = [];
  changes.forEach((change, c) => {
    const op = by.get(c);
    if (op === undefined) unexplained.push(change);
    else explained.push({ change, by: op });
  });
  return { explained, unexplained };
}
