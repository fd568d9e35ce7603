/**
 * The etag handed out after a checkout lock is released: the server's new one only when
 * the file is still the version it was under the lock (unlock.ts).
 */
import { describe, expect, it } from 'vitest';
import type { EntryLike } from '../../broker/operations/ports.js';
import { unlockWithEtag } from '../../broker/operations/unlock.js';

const file = (over: Partial<EntryLike> = {}): EntryLike => ({
  name: 'doc.txt',
  path: 'Co/doc.txt',
  kind: 'file',
  size: 2,
  modified: '2026-12-01T09:00:00.000Z',
  etag: '"under-lock"',
  ...over,
});

/** A client whose stat answers `before` until the unlock, then `after`. */
function client(before: EntryLike | Error, after: EntryLike | Error) {
  let unlocked = false;
  const calls: string[] = [];
  return {
    calls,
    stat: (path: string) => {
      calls.push(`stat ${path}`);
      const v = unlocked ? after : before;
      return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
    },
    unlock: (path: string, token: string) => {
      calls.push(`unlock ${path} ${token}`);
      unlocked = true;
      return Promise.resolve();
    },
  };
}

describe('the etag after an unlock', () => {
  it('is the new one when size and modification time are unchanged', async () => {
    const c = client(file(), file({ etag: '"after-unlock"' }));
    expect(await unlockWithEtag(c, 'Co/doc.txt', 'opaquelocktoken:t')).toBe('"after-unlock"');
    expect(c.calls).toEqual([
      'stat Co/doc.txt',
      'unlock Co/doc.txt opaquelocktoken:t',
      'stat Co/doc.txt',
    ]);
  });

  it('is null when someone wrote between the unlock and the read (another size or time)', async () => {
    for (const changed of [file({ size: 3 }), file({ modified: '2026-12-01T09:00:01.000Z' })])
      expect(await unlockWithEtag(client(file(), changed), 'Co/doc.txt', 't')).toBeNull();
  });

  it('is null when the file became a folder or cannot be read; the unlock still happens', async () => {
    const gone = client(file(), new Error('unreachable'));
    expect(await unlockWithEtag(gone, 'Co/doc.txt', 't')).toBeNull();
    expect(gone.calls).toContain('unlock Co/doc.txt t');
    const blind = client(new Error('unreachable'), file());
    expect(await unlockWithEtag(blind, 'Co/doc.txt', 't')).toBeNull();
    expect(blind.calls).toContain('unlock Co/doc.txt t');
    expect(
      await unlockWithEtag(client(file(), file({ kind: 'folder' })), 'Co/doc.txt', 't'),
    ).toBeNull();
    expect(
      await unlockWithEtag(client(file({ modified: null }), file()), 'Co/doc.txt', 't'),
    ).toBeNull();
  });

  it('a failing unlock fails the call (the lock may still hold)', async () => {
    const c = {
      stat: () => Promise.resolve(file()),
      unlock: () => Promise.reject(new Error('bad_lock_token')),
    };
    await expect(unlockWithEtag(c, 'Co/doc.txt', 't')).rejects.toThrow('bad_lock_token');
  });
});
