/**
 * Taking back what an operation did to files (docs/contracts.md §6 `broker undo`):
 *
 * - a replaced content (push, checkin): the version Nextcloud kept of it, found by the
 *   replaced content's mtime and size, is restored, while the file still holds exactly
 *   what the broker wrote (its sha256; an overwrite in the same second keeps the ETag);
 * - a new file or folder: moved to the trash bin (under a unique name, as the agent's
 *   trash), a folder only while it is empty;
 * - a move: moved back, while the item (by file id) is still there and its old place free;
 * - a trash: restored from the trash bin (it comes back under the name it was trashed
 *   under) and renamed to where it was.
 *
 * Security: undo never destroys and never guesses. It replaces only the content the
 * broker wrote, and only through Nextcloud's restore, which keeps that content as a
 * version; it removes only through the trash bin; it never moves onto anything. When
 * what is there is not what the operation left (another file, another content, a place
 * taken, the version gone, or a version already named by the current mtime, over which
 * Nextcloud's restore drops the current content), it changes nothing and says what is
 * there (`changed_since`). Every path is one the audited operation's own lines name: the
 * wall's canonical paths when the agent acted, or the unique name its trash gave.
 */
import { digestStream } from '../hashing.js';
import { isNextcloudError, isNotFound } from '../nextcloud-errors.js';
import type { EffectRecord, TrashRecord } from '../../audit/changes.js';
import type { Entry } from '../../nextcloud/client.js';
import type { NextcloudPort } from '../ports.js';
import type { RecordedOperation } from './scan.js';
import {
  changedSince,
  mtimeOf,
  notUndoable,
  nowAt,
  placeTaken,
  statOrNull,
  wouldUndo,
  type Undoing,
} from './undoing.js';

/** How undo trashes: the unique-name trash, weighed by the space guard first (service.ts). */
export type TrashFor = (client: NextcloudPort, path: string) => Promise<Undoing>;

const when = (seconds: number): string => new Date(seconds * 1000).toISOString();

/** The file at `path` as the upload left it, or why not (undefined: it is). */
async function asWritten(
  client: NextcloudPort,
  op: RecordedOperation,
  path: string,
  fileId: string | null,
): Promise<{ entry: Entry } | { left: Undoing }> {
  const entry = await statOrNull(client, path);
  const left = (reason: string): { left: Undoing } => ({
    left: changedSince(reason, nowAt(path, entry)),
  });
  if (entry === null) return left(`"${path}" is no longer there (moved or deleted since)`);
  if (entry.kind !== 'file') return left(`a folder is at "${path}" now`);
  if (fileId !== null && entry.fileId !== undefined && entry.fileId !== fileId)
    return left(`another file is at "${path}" now (file id ${entry.fileId}, was ${fileId})`);
  if (entry.size !== op.size) return left(`"${path}" holds other content now (its size changed)`);
  // Security: the content itself decides, not its ETag (kept by an overwrite within the
  // same second, observed on 34 and 29).
  const { stream } = await client.readStream(path);
  const { sha256 } = await digestStream(stream);
  if (sha256 !== op.sha256) return left(`"${path}" holds other content now than the broker wrote`);
  return { entry };
}

/** A push or checkin over a file: the version it replaced goes back in place. */
export async function undoReplaced(
  client: NextcloudPort,
  op: RecordedOperation,
  effect: Extract<EffectRecord, { kind: 'replaced' }>,
  dryRun: boolean,
): Promise<Undoing> {
  const { file_id: fileId, replaced } = effect;
  const { mtime, size } = replaced;
  if (op.path === undefined || op.sha256 === undefined || op.size === undefined)
    return notUndoable('its record does not say what the broker wrote');
  if (fileId === null || mtime === null || size === null)
    return notUndoable(
      "its record does not name the file's id, or the replaced content's mtime and size",
    );
  const path = op.path;
  const found = await asWritten(client, op, path, fileId);
  if ('left' in found) return found.left;
  const current = mtimeOf(found.entry);
  const now = nowAt(path, found.entry);
  if (current === null) return changedSince(`Nextcloud does not say the mtime of "${path}"`, now);
  if (current === mtime)
    return changedSince(
      `Nextcloud kept no version of the content it replaced: both had the mtime ${when(mtime)}`,
      now,
    );
  // The file is there (checked above): a 404 here is the Versions app off (observed).
  const versions = await client.versions(fileId).catch((error: unknown) => {
    if (isNotFound(error)) return undefined;
    throw error;
  });
  if (versions === undefined)
    return changedSince(
      'Nextcloud lists no versions of it (the Versions app is off): the content it replaced cannot be restored',
      now,
    );
  const version = versions.find((v) => v.mtime === mtime * 1000 && v.size === size);
  if (version === undefined)
    return changedSince(
      `the version it replaced (mtime ${when(mtime)}, ${size} bytes) is gone: expired or deleted`,
      { ...now, entries: versions.length },
    );
  // Security: Nextcloud's restore keeps the current content as a version named by its
  // mtime, unless one of that name is saved already: then it drops the current content.
  if (await client.versionSaved(fileId, String(current)))
    return changedSince(
      `a version is already saved under the current mtime (${when(current)}), so Nextcloud's restore would drop what the file holds instead of keeping it`,
      now,
    );
  const restore = `put back the version of ${when(mtime)} (${size} bytes) at "${path}"`;
  if (dryRun) return wouldUndo(restore);
  // Security: right before the restore, the file must still be what was hashed.
  const again = await statOrNull(client, path);
  if (again?.etag !== found.entry.etag || again.size !== found.entry.size)
    return changedSince(`"${path}" changed while undo checked it`, nowAt(path, again));
  await client.restoreVersion(fileId, version.name);
  return {
    result: 'undone',
    reason: `${restore}; what the broker wrote is kept as the version of ${when(current)}`,
    version: version.name,
  };
}

/** A new file (push): to the trash bin, while it holds what the broker wrote. */
export async function undoCreatedFile(
  client: NextcloudPort,
  op: RecordedOperation,
  effect: Extract<EffectRecord, { kind: 'created' }>,
  dryRun: boolean,
  trash: TrashFor,
): Promise<Undoing> {
  if (op.path === undefined || op.sha256 === undefined || op.size === undefined)
    return notUndoable('its record does not say what the broker wrote');
  const found = await asWritten(client, op, op.path, effect.file_id);
  if ('left' in found) return found.left;
  if (dryRun) return wouldUndo(`move "${op.path}" to the trash bin`);
  return trash(client, op.path);
}

/** A new folder (mkdir): to the trash bin, while it is empty. */
export async function undoCreatedFolder(
  client: NextcloudPort,
  op: RecordedOperation,
  effect: Extract<EffectRecord, { kind: 'created' }>,
  dryRun: boolean,
  trash: TrashFor,
): Promise<Undoing> {
  const path = op.path;
  if (path === undefined) return notUndoable('its record names no path');
  const entry = await statOrNull(client, path);
  const now = nowAt(path, entry);
  if (entry === null)
    return changedSince(`"${path}" is no longer there (moved or deleted since)`, now);
  if (entry.kind !== 'folder') return changedSince(`a file is at "${path}" now`, now);
  if (effect.file_id !== null && entry.fileId !== undefined && entry.fileId !== effect.file_id)
    return changedSince(`another folder is at "${path}" now`, now);
  const { entries, next } = await client.list(path, undefined, 1);
  if (entries.length > 0)
    return changedSince(`"${path}" is not empty any more`, {
      ...now,
      entries: next === undefined ? entries.length : entries.length + 1,
    });
  if (dryRun) return wouldUndo(`move the empty folder "${path}" to the trash bin`);
  return trash(client, path);
}

/** A move: back where it came from, while it is where it went and that place is free. */
export async function undoMove(
  client: NextcloudPort,
  op: RecordedOperation,
  effect: Extract<EffectRecord, { kind: 'moved' }>,
  dryRun: boolean,
): Promise<Undoing> {
  const { from, to } = op;
  if (from === undefined || to === undefined) return notUndoable('its record names no paths');
  const entry = await statOrNull(client, to);
  if (entry === null)
    return changedSince(`nothing is at "${to}" now (moved or deleted since)`, nowAt(to, entry));
  if (effect.file_id !== null && entry.fileId !== undefined && entry.fileId !== effect.file_id)
    return changedSince(`another item is at "${to}" now`, nowAt(to, entry));
  const taken = await placeTaken(client, from);
  if (taken !== undefined) return taken;
  const back = `move "${to}" back to "${from}"`;
  if (dryRun) return wouldUndo(back);
  // Never over anything (`Overwrite: F`): a place taken meanwhile fails the move.
  await client.move(to, from);
  return { result: 'undone', reason: back.replace(/^move/, 'moved') };
}

/** Where a trashed item is now: in the trash bin (its entry), or still renamed in place. */
async function whereTrashed(
  client: NextcloudPort,
  trash: TrashRecord,
): Promise<
  | { renamed: true }
  | { item: { item: string; original: string; fileId: string } }
  | { left: Undoing }
> {
  if (trash.state === 'left_renamed' || trash.state === 'unconfirmed') {
    const at = await statOrNull(client, trash.renamed);
    if (at !== null) return { renamed: true };
    if (trash.state === 'left_renamed')
      return {
        left: changedSince(`it is no longer at "${trash.renamed}"`, nowAt(trash.renamed, null)),
      };
  }
  const items = await client.trashbin();
  // Its entry: the name recorded, else the one item from its unique name (no guess).
  const named = trash.name ?? null;
  const candidates =
    named !== null
      ? items.filter((i) => i.item === named)
      : items.filter((i) => i.original.normalize('NFC') === trash.renamed.normalize('NFC'));
  const entry = candidates.length === 1 ? candidates[0] : undefined;
  if (entry === undefined)
    return { left: changedSince('it is no longer in the trash bin (restored, or expired)') };
  if (trash.file_id !== undefined && trash.file_id !== null && entry.fileId !== trash.file_id)
    return { left: changedSince(`the trash bin entry "${entry.item}" holds another item now`) };
  return { item: entry };
}

/** A trash: from the trash bin (back under its unique name), then to where it was. */
export async function undoTrash(
  client: NextcloudPort,
  trash: TrashRecord,
  dryRun: boolean,
): Promise<Undoing> {
  const { original, renamed } = trash;
  const where = await whereTrashed(client, trash);
  if ('left' in where) return where.left;
  const taken = await placeTaken(client, original);
  if (taken !== undefined) return taken;
  const back = `restore "${original}" from the trash bin`;
  if (dryRun) return wouldUndo(back);
  let restored: string | undefined;
  if ('item' in where) {
    restored = where.item.item;
    const came = await client.restoreTrash(where.item);
    if (came.path === null)
      return changedSince(
        `restored from the trash bin, but another item took "${renamed}" meanwhile: Nextcloud put it beside that one as "… (restored)"`,
      );
  }
  try {
    await client.move(renamed, original);
  } catch (error) {
    return {
      ...changedSince(
        `it is back from the trash bin as "${renamed}", but could not be renamed to "${original}" (${isNextcloudError(error) ? error.message : 'an unexpected error'}): rename it by hand`,
        nowAt(renamed, await statOrNull(client, renamed).catch(() => null)),
      ),
      ...(restored === undefined ? {} : { restored }),
    };
  }
  return {
    result: 'undone',
    reason: `restored "${original}" from the trash bin`,
    ...(restored === undefined ? {} : { restored }),
  };
}
