/**
 * What a DELETE would not trash. On Nextcloud 29 a DELETE of the root of a received share
 * unshares it: nothing reaches any trash bin and the user cannot restore it; the same
 * happens to a share inside a deleted folder (the folder is trashed, the share is gone).
 * External storages and group folders are mounts of the same kind. So before a trash,
 * the item and every folder inside it are read for `nc:is-mount-root`
 * (docs/nextcloud-behaviour.md, "Trash, and what is not one").
 */
import type { NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { inspect, inspectChildren, type Inspection } from './inspect.js';

/** The most folders the check reads before it refuses rather than keep looking. */
export const MAX_TRASH_CHECK_FOLDERS = 1000;

function whatMount(mount: Inspection['mount']): { what: string; verb: string } {
  switch (mount.type) {
    case 'shared':
      return {
        what:
          mount.owner === null
            ? 'a share you received'
            : `a share you received from '${mount.owner}'`,
        verb: 'unshare',
      };
    case 'external':
    case 'external-session':
      return { what: 'an external storage', verb: 'remove the mount of' };
    case 'group':
      return { what: 'a group folder', verb: 'remove the mount of' };
    default:
      return { what: `a mount (type '${mount.type}')`, verb: 'remove the mount of' };
  }
}

function nextStep(verb: string): string {
  return verb === 'unshare'
    ? 'ask the owner; this would unshare, not trash'
    : 'ask the owner; this would remove the mount, not trash it';
}

/** Throws `not_trashable` when `item` (found while checking `target`) is a mount root. */
export function refuseMountRoot(target: string, item: Inspection): void {
  const at = item.entry.path;
  if (item.mount.root === undefined)
    throw new NextcloudError(
      'not_trashable',
      `Nextcloud did not say whether '${at}' is a share or a mount, which a delete would remove for good: nothing was deleted; ask the owner`,
    );
  if (!item.mount.root) return;
  const { what, verb } = whatMount(item.mount);
  throw new NextcloudError(
    'not_trashable',
    at === target
      ? `'${at}' is ${what}: a delete would ${verb} it, not trash it, and it could not be restored; nothing was deleted: ${nextStep(verb)}`
      : `'${target}' holds '${at}', ${what}: deleting '${target}' would ${verb} it, not trash it, and it could not be restored; nothing was deleted: trash the other items one by one, or ${nextStep(verb)}`,
  );
}

/**
 * Refuses (`not_trashable`) when `path` is, or holds at any depth, the root of a mount.
 * Reads the item, then each folder inside it breadth first (Depth 1 each, never
 * infinity), at most MAX_TRASH_CHECK_FOLDERS folders. Answers the item as it was when the
 * walk began: the caller reads it again right before its DELETE, and sends none if its
 * etag changed since (a share moved in by the owner's other clients: see trash.ts).
 */
export async function refuseUntrashable(
  conn: NextcloudConnection,
  path: string,
  signal?: AbortSignal,
): Promise<Inspection> {
  const target = await inspect({ conn }, path, signal);
  refuseMountRoot(path, target);
  if (target.entry.kind === 'folder') await refuseMountsBelow(conn, path, signal);
  return target;
}

async function refuseMountsBelow(
  conn: NextcloudConnection,
  path: string,
  signal?: AbortSignal,
): Promise<void> {
  const folders = [path];
  for (let read = 0; folders.length > 0; read += 1) {
    if (read >= MAX_TRASH_CHECK_FOLDERS)
      throw new NextcloudError(
        'not_trashable',
        `'${path}' holds more than ${MAX_TRASH_CHECK_FOLDERS} folders, too many to check for shares and mounts that a delete would remove for good: nothing was deleted; trash its parts one by one, or ask the owner`,
      );
    const folder = folders.shift() as string;
    for (const child of await inspectChildren(conn, folder, signal)) {
      refuseMountRoot(path, child);
      if (child.entry.kind === 'folder') folders.push(child.entry.path);
    }
  }
}
