/**
 * Releasing a checkout lock, and the etag the agent may keep afterwards.
 *
 * files_lock gives a file a new etag when it is locked and again when it is unlocked, so
 * an etag read under the lock is stale once the lock is gone: a push with it would be
 * refused as a clobber although nobody changed the file. So the file is read just before
 * and just after the UNLOCK. When its size and modification time are unchanged, nobody
 * wrote in between, and the new etag names the very bytes the agent holds. Otherwise, or
 * when either read fails, the etag is null: the agent must fetch again before it can
 * replace the file (with no etag a push is create-only, and refused).
 */
import type { NextcloudPort } from './ports.js';

type Client = Pick<NextcloudPort, 'stat' | 'unlock'>;

async function statOrUndefined(client: Client, path: string) {
  try {
    return await client.stat(path);
  } catch {
    // Only the etag handed out depends on it: without the read the answer is null.
    return undefined;
  }
}

/** UNLOCK, then the file's new etag if it is still the version it was under the lock. */
export async function unlockWithEtag(
  client: Client,
  path: string,
  token: string,
): Promise<string | null> {
  const before = await statOrUndefined(client, path);
  await client.unlock(path, token);
  if (before === undefined || before.kind !== 'file' || before.modified === null) return null;
  const after = await statOrUndefined(client, path);
  // Security: the new etag is handed out only for the version the agent has; a write by
  // someone else in between gives null, so the agent's next replace is refused.
  return after !== undefined &&
    after.kind === 'file' &&
    after.size === before.size &&
    after.modified === before.modified
    ? after.etag
    : null;
}
