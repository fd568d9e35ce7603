/**
 * Undo's answer, operation by operation (service.ts runs it): what each item says, what
 * undo does to an operation and where, what is decided without asking Nextcloud, which
 * items wait on an earlier one in a dry run, and the exit code the whole answer gives.
 */
import { errorDetail } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { UndoAction, UndoResult } from '../../audit/changes.js';
import { isNextcloudError } from '../nextcloud-errors.js';
import { OperationRefusal } from '../pipeline.js';
import type { RecordedOperation, UndoTarget } from './scan.js';
import { notUndoable, type Undoing } from './undoing.js';

/** What the owner asked: the target, a dry run or not, and who asked (the audit's actor). */
export interface UndoCommand {
  readonly target: UndoTarget;
  readonly dryRun: boolean;
  readonly actor: string;
}

/** One operation in undo's answer: which, what undo does to it and where, and how it went. */
export type UndoItem = {
  /** The operation's outcome line. */
  readonly seq: number;
  readonly tool: string;
  readonly instance: string;
  readonly action: UndoAction;
  readonly path?: string;
  readonly from?: string;
  readonly to?: string;
} & Undoing;

/** The exit code of `broker undo` (docs/contracts.md §6): 0 all undone, 2 retry, 5 some left. */
export type UndoExit = 0 | 2 | 5;

export type UndoAnswer =
  | {
      readonly ok: true;
      readonly target: UndoTarget;
      readonly dryRun: boolean;
      /** Newest first, as they were taken back. */
      readonly items: readonly UndoItem[];
      readonly warnings: readonly string[];
      readonly exit: UndoExit;
    }
  | {
      readonly ok: false;
      /** `usage`: no such seq or request, or not an operation; `audit`: the log. */
      readonly code: 'usage' | 'audit';
      readonly message: string;
      readonly nextStep: string;
    };

/** Results that leave an operation as it is. */
const LEFT: ReadonlySet<UndoResult> = new Set(['changed_since', 'not_undoable', 'failed']);
/** Codes after which trying again later may work (exit 2). */
const RETRY_LATER: ReadonlySet<string> = new Set([
  'nextcloud_unavailable',
  'unreachable',
  'timeout',
  'server_error',
  'throttled',
  'audit_unavailable',
  'cancelled',
]);

/** What undo does to an operation, and where. */
function actionOf(op: RecordedOperation): Pick<UndoItem, 'action' | 'path' | 'from' | 'to'> {
  const at = op.path === undefined ? {} : { path: op.path };
  switch (op.change.kind) {
    case 'upload':
      return { action: op.change.effect.kind === 'replaced' ? 'restore_version' : 'trash', ...at };
    case 'folder':
      return { action: 'trash', ...at };
    case 'move':
      return {
        action: 'move_back',
        ...(op.from === undefined ? {} : { from: op.from }),
        ...(op.to === undefined ? {} : { to: op.to }),
      };
    case 'trash':
      return { action: 'restore_trash', path: op.change.trash.original };
    case 'event':
      return { action: 'trash_event', path: op.change.effect.calendar };
    case 'lock':
      return { action: 'release_lock', ...at };
    default:
      return { action: 'none', ...at };
  }
}

/** The places an item acts on (a trash's unique name too). */
export function placesOf(item: Pick<UndoItem, 'path' | 'from' | 'to' | 'trash'>): string[] {
  return [item.path, item.from, item.to, item.trash?.renamed].filter(
    (p): p is string => p !== undefined,
  );
}

/** Whether one place is the other, or inside it. */
const related = (a: string, b: string): boolean =>
  a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/**
 * In a dry run, the earlier item (newer operation) that would change a place `op` acts
 * on: what `op` finds there then cannot be seen now, so it is not judged on what is
 * there now.
 */
export function dependsOn(
  op: RecordedOperation,
  earlier: readonly UndoItem[],
): UndoItem | undefined {
  const mine = placesOf(base(op));
  return earlier.find(
    (item) =>
      item.result === 'would_undo' &&
      item.instance === op.instance &&
      placesOf(item).some((p) => mine.some((m) => related(p, m))),
  );
}

export function base(
  op: RecordedOperation,
): Pick<UndoItem, 'seq' | 'tool' | 'instance' | 'action' | 'path' | 'from' | 'to'> {
  return { seq: op.seq, tool: op.tool, instance: op.instance, ...actionOf(op) };
}

/** What is decided without a request to Nextcloud, if anything. */
export function decidedWithout(
  op: RecordedOperation,
  instances: { has(name: string): boolean },
): Undoing | undefined {
  if (op.undoneAt !== undefined)
    return { result: 'already', reason: `taken back by undo record ${op.undoneAt}` };
  if (op.upload !== undefined) return { result: 'nothing', reason: ticketReason(op) };
  if (op.change.kind === 'none')
    return { result: 'nothing', reason: 'it changed nothing (a read, or it did not complete)' };
  if (op.change.kind === 'unrecorded')
    return notUndoable(
      'cannot undo: recorded before undo existed (its record does not say what it changed)',
    );
  if (!instances.has(op.instance))
    return {
      result: 'failed',
      code: 'unknown_instance',
      reason: `instance '${op.instance}' is no longer configured`,
    };
  return undefined;
}

/**
 * A write or checkin ticket's record: the ticket changed nothing, the upload that used it
 * did. An owner who picked the ticket's line (`tool=write` in `broker audit tail`) is
 * pointed at the upload's, which undo takes back.
 */
function ticketReason(op: RecordedOperation): string {
  const ticket = `a ${op.tool} ticket changes nothing itself`;
  const upload = op.upload;
  if (upload === undefined || upload === null) return `${ticket}, and no upload on record used it`;
  if (upload.outcome === 'ok')
    return `${ticket}; the upload it allowed is #${upload.seq}: broker undo ${upload.seq}`;
  const how = upload.outcome === undefined ? 'has no outcome on record' : `ended ${upload.outcome}`;
  return `${ticket}, and the upload that used it (#${upload.seq}) changed nothing: it ${how}`;
}

export function failed(error: unknown, logger: Logger): Undoing {
  if (isNextcloudError(error)) return { result: 'failed', code: error.code, reason: error.message };
  if (error instanceof OperationRefusal)
    return { result: 'failed', code: error.code, reason: error.envelope.message };
  logger.error('undo failed unexpectedly', { error: errorDetail(error) });
  return {
    result: 'failed',
    code: 'internal',
    reason: 'an unexpected error (see the broker log); nothing more was done for it',
  };
}

export function usage(message: string, nextStep: string): UndoAnswer {
  return { ok: false, code: 'usage', message, nextStep };
}

export function exitOf(items: readonly UndoItem[]): UndoExit {
  if (items.some((i) => i.result === 'failed' && RETRY_LATER.has(i.code ?? ''))) return 2;
  return items.some((i) => LEFT.has(i.result)) ? 5 : 0;
}
