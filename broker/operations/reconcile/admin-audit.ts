/**
 * An admin_audit log (Nextcloud's `admin_audit` app: JSON lines, docs/nextcloud-behaviour.md
 * "admin_audit") checked against the request ids the broker recorded. Every file action
 * of the account (read, write, create, delete, rename, copy, restore) is one line under
 * the request's `reqId`, the same id Nextcloud answers in `X-Request-Id`; a line whose
 * id the broker did not record was not the broker's request. Reads count: the Activity
 * app records none, so this is the one record of a file read with the app password.
 *
 * The lines differ by series (34: `File with id "151" accessed: "/alice/files/a.txt"`,
 * 29: `File accessed: "/a.txt"`); both are read. Login lines (every request writes two or
 * three) name no file and are not checked. Pure: the caller reads the file.
 */
import type { AuditFacts, AuditedOperation } from './audited.js';
import type { JsonObject } from '../../base/protocol.js';

/** One file action of the log. */
export interface FileAction {
  readonly reqId: string;
  /** ms */
  readonly time: number;
  readonly method: string;
  /** The line's message, as Nextcloud wrote it (for the owner's eyes; capped). */
  readonly message: string;
}

export interface AdminAuditLines {
  /** The account's file actions at or after `since`. */
  readonly actions: readonly FileAction[];
  /** Lines that are not JSON objects with the fields of admin_audit. */
  readonly unreadable: number;
}

export interface AdminAuditFindings {
  /** Actions under a request id the broker never recorded. */
  readonly unexplained: readonly FileAction[];
  /**
   * Unrecorded actions while an operation of the broker's was still open (its outcome,
   * which records the ids, not yet written): looked at again on the next run.
   */
  readonly pending: readonly FileAction[];
}

/** A file action, in the words of 34 and of 29 (login and cache lines are not). */
const FILE_ACTION =
  /^(File (with id "\d+" )?(accessed|written to|created|updated|deleted): |File renamed\b|File (id )?copied\b|File ".*" (restored from|deleted from) trash bin|Version |Preview accessed)/;
const MAX_MESSAGE = 300;

function field(line: JsonObject, name: string): string | undefined {
  const v = line[name];
  return typeof v === 'string' ? v : undefined;
}

/** The account's file actions in `text` (the whole log, or any part of whole lines). */
export function readAdminAudit(text: string, user: string, since: number): AdminAuditLines {
  const actions: FileAction[] = [];
  let unreadable = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let line: JsonObject;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw raw;
      line = parsed as JsonObject;
    } catch {
      unreadable += 1;
      continue;
    }
    const reqId = field(line, 'reqId');
    const time = Date.parse(field(line, 'time') ?? '');
    const message = field(line, 'message');
    if (reqId === undefined || !Number.isFinite(time) || message === undefined) {
      unreadable += 1;
      continue;
    }
    if (field(line, 'user') !== user || time < since || !FILE_ACTION.test(message)) continue;
    actions.push({
      reqId,
      time,
      method: field(line, 'method') ?? '',
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message,
    });
  }
  return { actions, unreadable };
}

/**
 * Which actions the broker did not send. `instances`: those of the log's account (an
 * operation of another account does not make an action of this one pending).
 */
export function checkAdminAudit(
  actions: readonly FileAction[],
  facts: AuditFacts,
  instances: readonly string[],
  toleranceMs: number,
): AdminAuditFindings {
  // Security: a request id counts only when the broker's own requests answered it; a
  // `doctor` run reads no file, so an id it recorded explains no file action.
  const recorded = (id: string): boolean => {
    const source = facts.requestIds.get(id);
    return source !== undefined && source !== 'doctor';
  };
  const open: AuditedOperation[] = facts.operations.filter(
    (op) => op.end === undefined && instances.includes(op.instance),
  );
  const unexplained: FileAction[] = [];
  const pending: FileAction[] = [];
  for (const action of actions) {
    if (recorded(action.reqId)) continue;
    const inFlight = open.some((op) => action.time >= op.start - 1000 - toleranceMs);
    (inFlight ? pending : unexplained).push(action);
  }
  return { unexplained, pending };
}
