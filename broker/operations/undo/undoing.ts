/**
 * What undo did to one operation, or why it left it as it is: the vocabulary its steps
 * answer in (files.ts, others.ts) and its outcome line records (`undo`, docs/contracts.md
 * §4). A step never throws for "changed since": only Nextcloud failing throws.
 */
import type { TrashRecord, UndoNow, UndoResult } from '../../audit/changes.js';
import type { Entry } from '../../nextcloud/client.js';
import type { NextcloudPort } from '../ports.js';
import { isNotFound } from '../nextcloud-errors.js';

export interface Undoing {
  readonly result: UndoResult;
  /** In words, for the owner: what was done, or why not. */
  readonly reason: string;
  /** What is there now, when it was left as it is. */
  readonly now?: UndoNow;
  /** The version put back (its name). */
  readonly version?: string;
  /** The trash bin entry put back. */
  readonly restored?: string;
  /** What undo moved to the trash bin. */
  readonly trash?: TrashRecord;
  /** The calendar trash bin item the event went to (null: not found in the listing). */
  readonly calendar_trash?: string | null;
  /** Why Nextcloud failed (`failed`). */
  readonly code?: string;
}

/** Left as it is: what is there changed since the operation (`now`). */
export function changedSince(reason: string, now?: UndoNow): Undoing {
  return { result: 'changed_since', reason, ...(now === undefined ? {} : { now }) };
}

/** Left as it is: the operation's record does not say enough. */
export function notUndoable(reason: string): Undoing {
  return { result: 'not_undoable', reason };
}

/** A dry run's answer once every check passed. */
export function wouldUndo(what: string): Undoing {
  return { result: 'would_undo', reason: `would ${what}` };
}

/** The unix seconds of an entry's mtime (null when Nextcloud did not say). */
export function mtimeOf(entry: Pick<Entry, 'modified'>): number | null {
  const ms = entry.modified === null ? NaN : Date.parse(entry.modified);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
}

/** What is at `path` now, for a `changed_since` (null: nothing). */
export function nowAt(path: string, entry: Entry | null): UndoNow {
  if (entry === null) return { path, exists: false };
  return {
    path,
    exists: true,
    kind: entry.kind,
    file_id: entry.fileId ?? null,
    size: entry.size,
    etag: entry.etag,
    mtime: mtimeOf(entry),
  };
}

/** The item at `path`, or null when nothing is there. */
export async function statOrNull(
  client: Pick<NextcloudPort, 'stat'>,
  path: string,
): Promise<Entry | null> {
  try {
    return await client.stat(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** The folder `path` is in ('' for the root). */
export function folderOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut < 0 ? '' : path.slice(0, cut);
}

/**
 * Why `path` cannot take an item back now (it is taken, or its folder is gone), or
 * undefined when it is free. Undo never overwrites: a taken place is left to the owner.
 */
export async function placeTaken(
  client: Pick<NextcloudPort, 'stat'>,
  path: string,
): Promise<Undoing | undefined> {
  const folder = folderOf(path);
  if (folder !== '') {
    const parent = await statOrNull(client, folder);
    if (parent?.kind !== 'folder')
      return changedSince(`the folder "${folder}" it was in is gone`, nowAt(folder, parent));
  }
  const there = await statOrNull(client, path);
  if (there !== null)
    return changedSince(
      `"${path}" is taken by another item now: move that item aside, then undo again`,
      nowAt(path, there),
    );
  return undefined;
}
