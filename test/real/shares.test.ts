/**
 * A share the owner received, on the real server: bob shares a folder with alice (OCS,
 * as the web UI does). A DELETE of its root, or of a folder holding it, would unshare it
 * for good (nothing in any trash bin), so the broker refuses those trashes before any
 * DELETE; a file inside it is trashed as usual and can be restored; the share's root
 * moves like a folder of her own.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/mcp.js';
import { useRealRig } from './rig.js';

const rig = useRealRig();

/** What alice has received from bob (the OCS list of shares with her). */
async function received(): Promise<string[]> {
  const res = await rig.owner.request(
    'GET',
    '/ocs/v2.php/apps/files_sharing/api/v1/shares?shared_with_me=true&format=json',
    { 'OCS-APIRequest': 'true' },
  );
  const doc = JSON.parse(res.text) as { ocs: { data: { file_target: string }[] } };
  return doc.ocs.data.map((s) => s.file_target);
}

describe('attack: trash a share the owner received (Nextcloud would unshare it)', () => {
  it('the root is refused with the next step; a file inside is trashed and restorable', async () => {
    await rig.other.writeFile('BobShared/inner.txt', 'from bob');
    await rig.other.writeFile('BobShared/keep.txt', 'from bob');
    await rig.receive('BobShared');
    expect(await rig.owner.read('BobShared/inner.txt')).toBe('from bob');
    await rig.broker.grant([{ path: 'BobShared', mode: 'write' }]);

    const root = await call(rig.agent, 'trash', { instance: 'personal', path: 'BobShared' });
    expect(root).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(root.message)).toContain('ask the owner; this would unshare, not trash');
    expect(await received()).toEqual(['/BobShared']);
    expect(await rig.owner.read('BobShared/keep.txt')).toBe('from bob');

    const inner = await call(rig.agent, 'trash', {
      instance: 'personal',
      path: 'BobShared/inner.txt',
    });
    expect(inner).toMatchObject({ status: 'ok' });
    expect(await rig.owner.exists('BobShared/inner.txt')).toBe(false);
    expect(inner['trashed_as']).toMatch(/^BobShared\/inner \(trashed [a-z2-7]{8}\)\.txt$/);
    expect((await rig.owner.trash()).map((t) => t.original)).toContain(inner['trashed_as']);
  });

  it('the root moves like a folder of hers; a folder holding it is then refused too', async () => {
    await rig.other.writeFile('BobMoves/x.txt', 'from bob');
    await rig.receive('BobMoves');
    await rig.owner.writeFile('Work/notes.txt', 'mine');
    await rig.broker.grant([
      { path: 'BobMoves', mode: 'write' },
      { path: 'Work', mode: 'write' },
    ]);
    const moved = await call(rig.agent, 'move', {
      instance: 'personal',
      from: 'BobMoves',
      to: 'Work/BobMoves',
    });
    expect(moved).toMatchObject({ status: 'ok' });
    // A plain move: the share followed, bob's file is there under the new path.
    expect(await rig.owner.read('Work/BobMoves/x.txt')).toBe('from bob');
    expect(await received()).toContain('/Work/BobMoves');

    const work = await call(rig.agent, 'trash', { instance: 'personal', path: 'Work' });
    expect(work).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(work.message)).toContain('Work/BobMoves');
    expect(await received()).toContain('/Work/BobMoves');
    expect(await rig.owner.read('Work/notes.txt')).toBe('mine');
  });
});
