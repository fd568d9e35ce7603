/**
 * The etag handed out after a checkout lock is released: the server's new one only when
 * the file is still the version it was under the lock (unlock.ts). The file is read
 * before the release; the release's own confirming read is the version after it.
 */
import { describe, expect, it } from 'vitest';
import type { Entry, Released } from '../../broker/nextcloud/client.js';
import { unlockWithEtag } from '../../broker/operations/unlock.js';

const file = (over: Partial<Entry> = {}): Entry => ({
  name: 'doc.txt',
  path: 'Co/doc.txt',
  kind: 'file',
  size: 2,
  modified: '2026-12-01T09:00:00.000Z',
  etag: '"under-lock"',
  ...over,
});

/** A client whose stat answers `before`, and whose release reads `after` (null: gone). */
function client(
  before: Entry | Error,
  after: Entry | null,
  outcome: Released['outcome'] = 'unlocked',
) {
  const calls: string[] = [];
  return {
    calls,
    stat: (path: string) => {
      calls.push(`stat ${path}`);
      return before instanceof Error ? Promise.reject(before) : Promise.resolve(before);
    },
    releaseLock: (path: string, token: string) => {
      calls.push(`release ${path} ${token}`);
      return Promise.resolve({ outcome, entry: after });
    },
  };
}

describe('the etag after an unlock', () => {
  it('is the new one when size and modification time are unchanged', async () => {
    const c = client(file(), file({ etag: '"after-unlock"' }));
    expect(await unlockWithEtag(c, 'Co/doc.txt', 'opaquelocktoken:t')).toEqual({
      outcome: 'unlocked',
      etag: '"after-unlock"',
    });
    expect(c.calls).toEqual(['stat Co/doc.txt', 'release Co/doc.txt opaquelocktoken:t']);
  });

  it('is null when someone wrote between the unlock and the read (another size or time)', async () => {
    for (const changed of [file({ size: 3 }), file({ modified: '2026-12-01T09:00:01.000Z' })])
      expect((await unlockWithEtag(client(file(), changed), 'Co/doc.txt', 't')).etag).toBeNull();
  });

  it('is null when the file became a folder, is gone or could not be read first; the release still happens', async () => {
    const blind = client(new Error('unreachable'), file());
    expect((await unlockWithEtag(blind, 'Co/doc.txt', 't')).etag).toBeNull();
    expect(blind.calls).toContain('release Co/doc.txt t');
    expect(
      (await unlockWithEtag(client(file(), file({ kind: 'folder' })), 'Co/doc.txt', 't')).etag,
    ).toBeNull();
    expect((await unlockWithEtag(client(file(), null), 'Co/doc.txt', 't')).etag).toBeNull();
    expect(
      (await unlockWithEtag(client(file({ modified: null }), file()), 'Co/doc.txt', 't')).etag,
    ).toBeNull();
  });

  it('says when the token held nothing any more (the lock was already gone)', async () => {
    const c = client(file(), file({ etag: '"x"' }), 'not_held');
    expect(await unlockWithEtag(c, 'Co/doc.txt', 't')).toMatchObject({ outcome: 'not_held' });
  });

  it('a release that cannot be confirmed fails the call (the lock may still hold)', async () => {
    const c = {
      stat: () => Promise.resolve(file()),
      releaseLock: () => Promise.reject(new Error('still locked')),
    };
    await expect(unlockWithEtag(c, 'Co/doc.txt', 't')).rejects.toThrow('still locked');
  });
});
