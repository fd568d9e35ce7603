/**
 * Delete into the trash bin so that no later delete can overwrite the entry, whoever
 * sends it (docs/nextcloud-behaviour.md, "Trash names are per second").
 *
 * Nextcloud names a trashed item `NAME.d<unix seconds>`. A second delete of the same NAME
 * in the same second (from any folder, by any client of the account) that does not
 * overlap the first unlinks the first entry (files_trashbin `Trashbin::move2trash`): the
 * first item is gone for good. So the broker first renames the item, in its own folder,
 * to a name nobody else uses (`report (trashed k3j9x2ab).txt`, `MOVE` with `Overwrite: F`)
 * and deletes it under that name, then finds its entry by listing the trash bin (the
 * DELETE's answer does not name it, and Nextcloud moves the time on by a second for
 * deletes that overlap). The answer records what undo and the owner need: where the
 * item was, the name it was trashed under, and its trash bin entry.
 *
 * A failure between the rename and the delete loses nothing and leaves a state that is
 * named: the item is renamed back (`renamed_back`), or left under its unique name when
 * that cannot be done (`left_renamed`), or, when Nextcloud's answer to the DELETE was
 * lost, it is either there or in the trash bin (`unconfirmed`). Before the rename, the
 * checks of mounts.ts run and nothing is changed by a failure.
 */
import { NextcloudError } from './errors.js';
import { inspect, type Inspection } from './inspect.js';
import { refuseMountRoot, refuseUntrashable } from './mounts.js';
import type { Session } from './session.js';
import { listTrash } from './trashbin.js';
import { WALL_MAX_COMPONENT_BYTES } from '../base/limits.js';

/** What a trash did. Every state says where the item is; none loses it. */
export type TrashOutcome =
  | {
      readonly state: 'trashed';
      /** Where the item was (the canonical path the wall checked). */
      readonly original: string;
      /** The unique name it had (same folder) when it was deleted. */
      readonly renamed: string;
      /** Its entry in the trash bin (`trash/<name>`); null when the listing did not show exactly one. */
      readonly name: string | null;
      /** When the trash bin says it was deleted (unix seconds); null with `name`. */
      readonly deletedAt: number | null;
      /** The file id the trash bin lists for the entry; null with `name`. */
      readonly fileId: string | null;
    }
  | {
      /** `renamed_back`: at `original` again, unchanged; `left_renamed`: at `renamed`; `unconfirmed`: at `renamed` or in the trash bin under that name. */
      readonly state: 'renamed_back' | 'left_renamed' | 'unconfirmed';
      readonly original: string;
      readonly renamed: string;
      /** Why the delete did not happen (or could not be confirmed). */
      readonly cause: NextcloudError;
    };

/**
 * The unique name an item is trashed under: `TAG` after the stem, the extension kept
 * (`report (trashed k3j9x2ab).txt`, a folder `Docs (trashed k3j9x2ab)`), the stem cut
 * to stay within the wall's component limit. `tag` is the caller's random word.
 */
export function trashedName(path: string, tag: string): string {
  const cut = path.lastIndexOf('/');
  const folder = path.slice(0, cut + 1);
  const name = path.slice(cut + 1);
  const dot = name.lastIndexOf('.');
  // An extension is a short last part after a dot that does not start the name.
  const ext =
    dot > 0 && name.length - dot <= 16 && !/\s/.test(name.slice(dot)) ? name.slice(dot) : '';
  const suffix = ` (trashed ${tag})${ext}`;
  const stem = Array.from(ext === '' ? name : name.slice(0, dot));
  const budget = WALL_MAX_COMPONENT_BYTES - Buffer.byteLength(suffix, 'utf8');
  while (stem.length > 0 && Buffer.byteLength(stem.join(''), 'utf8') > budget) stem.pop();
  // A cut stem ends on no space or dot (names Nextcloud treats specially on some clients).
  while (stem.length > 0 && /[\s.]/.test(stem[stem.length - 1] ?? '')) stem.pop();
  return `${folder}${stem.join('')}${suffix}`;
}

/**
 * Delete into the trash bin under a unique name; refused (nothing changed) when the trash
 * bin is off, and when the item is or holds a mount (a received share, an external
 * storage) that the DELETE would unshare or unmount instead of trashing.
 */
export function trash(
  {
    conn,
    capabilities,
    namespace,
    trashTag,
  }: Pick<Session, 'conn' | 'capabilities' | 'namespace' | 'trashTag'>,
  path: string,
  signal?: AbortSignal,
): Promise<TrashOutcome> {
  // Security: the check for shares and mounts, the rename and the DELETE they allow are
  // one step for this instance's namespace: no move or mkdir of the broker's runs between.
  return namespace.run(() => trashNow(conn, capabilities, path, trashTag(), signal), signal);
}

async function trashNow(
  conn: Session['conn'],
  capabilities: Session['capabilities'],
  path: string,
  tag: string,
  signal: AbortSignal | undefined,
): Promise<TrashOutcome> {
  // The root, and any path the client would not send, is refused before any request.
  conn.url(path);
  // Security: a DELETE is permanent when the trash bin is off. Ask afresh (not the
  // cache) so a trash bin switched off a minute ago is noticed.
  const caps = await capabilities.fetch(signal);
  if (!caps.undelete)
    throw new NextcloudError(
      'trash_disabled',
      `the trash bin is off on instance '${conn.name}', so a delete would be permanent: nothing was deleted; ask the owner to enable files_trashbin`,
    );
  const checked = await refuseUntrashable(conn, path, signal);
  // Security: the walk takes a while and the broker serialises only its own changes; the
  // owner's other clients can still move a share in meanwhile. A folder's etag changes
  // when anything below it does (observed on 34), so the item is read again before it is
  // renamed, and once more right before its DELETE (a rename keeps the etag: observed
  // on 34 and 29): it must be exactly as it was when the walk began, both times.
  unchanged(path, checked, await inspect({ conn }, path, signal));
  const renamed = trashedName(path, tag);
  // Nothing has changed if this fails.
  await rename(conn, path, renamed, signal);
  try {
    unchanged(path, checked, await inspect({ conn }, renamed, signal));
    await conn.exchange(
      { method: 'DELETE', url: conn.url(renamed), headers: {} },
      {
        idempotent: false,
        ok: [200, 204],
        ctx: { verb: 'DELETE', instance: conn.name, path: renamed },
        signal,
      },
    );
  } catch (error) {
    if (!(error instanceof NextcloudError)) throw error;
    return afterFailedDelete(conn, path, renamed, error);
  }
  return { state: 'trashed', original: path, renamed, ...(await entryOf(conn, renamed)) };
}

/** Refuses (`not_trashable`) an item that is not as it was when the check began. */
function unchanged(path: string, checked: Inspection, again: Inspection): void {
  refuseMountRoot(path, again);
  if (checked.entry.etag === null || again.entry.etag !== checked.entry.etag)
    throw new NextcloudError(
      'not_trashable',
      `'${path}' changed while the broker checked it for shares and mounts that a delete would remove for good: nothing was deleted; trash it again`,
    );
}

/** A rename in place, never over anything (`Overwrite: F`, as every move); not retried. */
async function rename(
  conn: Session['conn'],
  from: string,
  to: string,
  signal?: AbortSignal,
): Promise<void> {
  await conn.exchange(
    {
      method: 'MOVE',
      url: conn.url(from),
      headers: { destination: conn.url(to).href, overwrite: 'F' },
    },
    {
      idempotent: false,
      ok: [201, 204],
      ctx: { verb: 'MOVE', instance: conn.name, path: from, to },
      signal,
    },
  );
}

/** Whether a failed request may still have been carried out (its answer never came). */
function mayHaveHappened(error: NextcloudError): boolean {
  return ['unreachable', 'timeout', 'server_error', 'cancelled', 'aborted'].includes(error.code);
}

/**
 * After the rename, the DELETE failed or was not sent: put the item back under its name.
 * The clean-up runs without the operation's signal (a grant that ended stops the agent's
 * operation, not the broker undoing its own half of it) and never overwrites anything.
 */
async function afterFailedDelete(
  conn: Session['conn'],
  original: string,
  renamed: string,
  cause: NextcloudError,
): Promise<TrashOutcome> {
  const failed = { original, renamed, cause };
  if (mayHaveHappened(cause)) {
    const there = await inspect({ conn }, renamed).then(
      () => true,
      (error: unknown) =>
        error instanceof NextcloudError && error.code === 'not_found' ? false : undefined,
    );
    if (there === undefined) return { state: 'unconfirmed', ...failed };
    if (!there) {
      const entry = await entryOf(conn, renamed);
      return entry.name === null
        ? { state: 'unconfirmed', ...failed }
        : { state: 'trashed', original, renamed, ...entry };
    }
  }
  try {
    await rename(conn, renamed, original);
    return { state: 'renamed_back', ...failed };
  } catch {
    return { state: 'left_renamed', ...failed };
  }
}

/**
 * The trash bin entry of what was deleted as `renamed`: the one whose original location
 * is exactly that path (no other item had that name). A listing that cannot be read, or
 * that shows none or several, leaves it unnamed: the item is in the trash bin all the same.
 */
async function entryOf(
  conn: Session['conn'],
  renamed: string,
): Promise<{ name: string | null; deletedAt: number | null; fileId: string | null }> {
  const found = await listTrash({ conn }).then(
    (items) => items.filter((i) => i.original.normalize('NFC') === renamed.normalize('NFC')),
    () => [],
  );
  const only = found.length === 1 ? found[0] : undefined;
  return only === undefined
    ? { name: null, deletedAt: null, fileId: null }
    : { name: only.item, deletedAt: Math.floor(only.deletedAt / 1000), fileId: only.fileId };
}
