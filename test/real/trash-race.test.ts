/**
 * Attack, on the real server: move a share the owner received into a folder while the
 * broker checks that folder's subtree before trashing it. The folder has many
 * subfolders, so the check (one PROPFIND each) takes seconds; a share moved in behind it
 * would be unshared for good by the DELETE (nothing in any trash bin). The broker's own
 * move waits for the trash to finish; a move by the owner's own client changes the
 * folder's etag, which the broker reads again right before the DELETE.
 *
 * The broker reaches the server through a gate that holds the check's PROPFIND of one
 * subfolder, so each move lands while the check is running, whatever the machine's speed.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/mcp.js';
import type { GateProxy } from '../../support/gate-proxy.js';
import { useRealRig } from './rig.js';

const rig = useRealRig({}, { gate: true });

/** Subfolders the check walks (one PROPFIND each). */
const SUBFOLDERS = 16;

const gateOf = (): GateProxy => {
  if (rig.gate === undefined) throw new Error('the rig was made without its gate');
  return rig.gate;
};

/** Holds the check's PROPFIND of the middle subfolder of `name`: the check is under way. */
const holdCheckOf = (name: string): Promise<void> =>
  gateOf().holdRequest(new RegExp(`PROPFIND \\S*/${name}/d008/? HTTP/1\\.1\r\n`));

/** The folders alice received from bob (the OCS list of shares with her). */
async function received(): Promise<string[]> {
  const res = await rig.owner.request(
    'GET',
    '/ocs/v2.php/apps/files_sharing/api/v1/shares?shared_with_me=true&format=json',
    { 'OCS-APIRequest': 'true' },
  );
  const doc = JSON.parse(res.text) as { ocs: { data: { file_target: string }[] } };
  return doc.ocs.data.map((s) => s.file_target);
}

/** `name` with SUBFOLDERS subfolders, and a share `share` bob gives alice. */
async function scene(name: string, share: string): Promise<void> {
  await rig.owner.mkdirs(name);
  // Four at a time: the server takes a while over each.
  for (let i = 0; i < SUBFOLDERS; i += 4) {
    const batch = [i, i + 1, i + 2, i + 3].map(async (n) => {
      const res = await rig.owner.mkcol(`${name}/d${String(n).padStart(3, '0')}`);
      if (res.status !== 201) throw new Error(`MKCOL ${name}/d${n}: ${res.status}`);
    });
    await Promise.all(batch);
  }
  await rig.other.writeFile(`${share}/inner.txt`, 'from bob');
  await rig.receive(share);
  await rig.broker.grant([
    { path: name, mode: 'write' },
    { path: share, mode: 'write' },
  ]);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('attack: move a received share into a folder while its trash is being checked', () => {
  it('the broker’s move waits for the trash; the share is never unshared', async () => {
    await scene('Race', 'BobShared');
    const second = await rig.broker.agent();
    const held = holdCheckOf('Race');
    const trashing = call(rig.agent, 'trash', { instance: 'personal', path: 'Race' });
    await held;
    let trashDone = false;
    void trashing.finally(() => (trashDone = true));
    const moving = call(second, 'move', {
      instance: 'personal',
      from: 'BobShared',
      to: 'Race/BobShared',
    });
    // The move is at the broker while the check is held; it must wait for the trash.
    // (No answer of Nextcloud can reach it meanwhile: the check is stuck at the gate.)
    await pause(300);
    expect(trashDone).toBe(false);
    gateOf().release();
    const [trashed, moved] = await Promise.all([trashing, moving]);
    expect(await received()).toEqual(['/BobShared']);
    expect(await rig.owner.read('BobShared/inner.txt')).toBe('from bob');
    // Served in order: the trash first, so the move found no folder to go into.
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(moved).toMatchObject({ status: 'refused', code: 'not_found' });
    // Trashed under its unique name, the one the answer gives.
    expect((await rig.owner.trash()).map((t) => t.original)).toContain(trashed['trashed_as']);
  }, 120_000);

  it('a share the owner’s own client moves in during the check stops the trash', async () => {
    await scene('Outside', 'BobOutside');
    const held = holdCheckOf('Outside');
    const trashing = call(rig.agent, 'trash', { instance: 'personal', path: 'Outside' });
    await held;
    const moved = await rig.owner.request('MOVE', rig.owner.target('BobOutside'), {
      Destination: `${rig.server.url}${rig.owner.target('Outside/BobOutside')}`,
      Overwrite: 'F',
    });
    expect(moved.status).toBe(201);
    gateOf().release();
    const trashed = await trashing;
    expect(await received()).toContain('/Outside/BobOutside');
    expect(await rig.owner.read('Outside/BobOutside/inner.txt')).toBe('from bob');
    expect(trashed).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(trashed.message)).toContain('changed while the broker checked it');
  }, 120_000);
});
