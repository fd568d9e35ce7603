/**
 * What one Activity row says was changed, in the terms the matcher compares
 * (docs/nextcloud-behaviour.md "The Activity app"): the kind of change, the file's id
 * and its path in the account's view (a move: the new path and the old), a calendar
 * event's UID. Pure: the row is Nextcloud's, read by broker/nextcloud/activity.ts.
 *
 * Paths: `object_name` has a leading slash (`/D/b.txt`), two at the root after a move
 * (`//b.txt`); a move's old path is its `oldfile` parameter (no leading slash). Both
 * are compared without the leading slashes, as the wall's canonical paths are written.
 * The kind is read from the row's `type` and parameter names, never from its words:
 * the subject is in the account's language.
 */
import type { Activity } from '../../nextcloud/client.js';

export type ChangeKind =
  /** A file or folder created (PUT, MKCOL, COPY, a chunked upload). */
  | 'created'
  /** A file's content replaced. */
  | 'changed'
  /** Renamed or moved (`file_changed` with an `oldfile`). */
  | 'moved'
  /** Deleted into the trash bin. */
  | 'deleted'
  /** Restored from the trash bin. */
  | 'restored'
  /** A calendar event created, changed, deleted or restored (one `type` for the four). */
  | 'event'
  /** Anything else the account did: a card, a calendar, a share, a favourite, … */
  | 'other';

export interface Change {
  /** The row's activity id. */
  readonly id: string;
  /** When (ms; Nextcloud writes whole seconds). */
  readonly time: number;
  /** The row's `type`, as Nextcloud names it (what the owner is shown). */
  readonly type: string;
  readonly kind: ChangeKind;
  /** Who made it (the account, for a row of its own stream). */
  readonly user: string;
  /** Files: the file's id. */
  readonly fileId?: string;
  /** The path in the account's view, no leading slash ('' when the row names none). */
  readonly path: string;
  /** A move's path before it. */
  readonly oldPath?: string;
  /** A calendar event's UID. */
  readonly uid?: string;
}

const FILE_KINDS: ReadonlyMap<string, ChangeKind> = new Map([
  ['file_created', 'created'],
  ['file_changed', 'changed'],
  ['file_deleted', 'deleted'],
  ['file_restored', 'restored'],
]);

/** A path as the wall writes it: no leading slash. */
export function viewPath(path: string): string {
  return path.replace(/^\/+/, '');
}

export function changeOf(row: Activity): Change {
  const base = { id: row.id, time: row.time, type: row.type, user: row.user };
  const fileKind = row.app === 'files' ? FILE_KINDS.get(row.type) : undefined;
  if (fileKind !== undefined) {
    const old = row.parameters['oldfile'];
    const moved = fileKind === 'changed' && old !== undefined;
    return {
      ...base,
      kind: moved ? 'moved' : fileKind,
      ...(row.objectType === 'files' ? { fileId: row.objectId } : {}),
      path: viewPath(row.objectName),
      ...(moved ? { oldPath: viewPath(old.path ?? '') } : {}),
    };
  }
  if (row.type === 'calendar_event') {
    const event = row.parameters['event'];
    return { ...base, kind: 'event', path: '', ...(event === undefined ? {} : { uid: event.id }) };
  }
  return { ...base, kind: 'other', path: viewPath(row.objectName) };
}

/**
 * What the owner is shown of where a change was, as far as the row says (a move: where it
 * went; its old path is the change's `oldPath`, shown beside it, never joined into one
 * text: a name may itself hold an arrow).
 */
export function shownPath(change: Change): string {
  if (change.kind === 'event') return `event ${change.uid ?? '?'}`;
  return change.path;
}
