/**
 * Releasing a checkout lock, and the etag the agent may keep afterwards.
 *
 * files_lock gives a file a new etag when it is locked and again when it is unlocked, so
 * an etag read under the lock is stale once the lock is gone: a push with it would be
 * refused as a clobber although nobody changed the file. So the file is read just before
 * the release, and the release itself reads it again (it confirms from the file's lock
 * properties that the token no longer holds). When its size and modification time are
 * unchanged, nobody wrote in between, and the new etag names the very bytes the agent
 * holds. Otherwise, or when the first read fails, the etag is null: the agent must fetch
 * again before it can replace the file (with no etag a push is create-only, and refused).
 */
import type { Released } from '../nextcloud/client.js';
import type { NextcloudPort } from './ports.js';

type Client = Pick<NextcloudPort, 'stat' | 'releaseLock'>;

async function statOrUndefined(client: Client, path: string) {
  try {
    return await client.stat(path);
  } catch {
    // Only the etag handed out depends on it: without the read the answer is null.
    return undefined;
  }
}

/**
 * Releases the lock (confirmed: see NextcloudPort.releaseLock), then answers the file's
 * new etag if it is still the version it was under the lock. Throws when the release
 * could not be confirmed.
 */
export async function unlockWithEtag(
  client: Client,
  path: string,
  token: string,
): Promise<{ outcome: Released['outcome']; etag: string | null }> {
  const before = await statOrUndefined(client, path);
  const { outcome, entry: after } = await client.releaseLock(path, token);
  if (before === undefined || before.kind !== 'file' || before.modified === null)
    return { outcome, etag: null };
  // Security: the new etag is handed out only for the version the agent has; a write by
  // someone else in between gives null, so the agent's next replace is refused.
  const same =
    after !== null &&
    after.kind === 'file' &&
    after.size === before.size &&
    after.modified === before.modified;
  return { outcome, etag: same ? after.etag : null };
}
