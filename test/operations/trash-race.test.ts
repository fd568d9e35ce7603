/**
 * Attack: a move of a received share into a folder while that folder's `trash` is being
 * checked. The check reads the whole subtree for shares and mounts (one PROPFIND per
 * folder, slow here through the fake's `propfindDelayMs`); a share moved in behind it
 * would be unshared for good by the DELETE that follows. The broker runs its own
 * namespace changes on an instance one at a time (the move waits for the trash), and
 * reads the folder again right before the DELETE, so a share moved in by the owner's
 * other clients stops the trash too. Either way the share survives.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { dav, davUrl } from '../fake-nextcloud/helpers.js';

/** Each PROPFIND of the check takes this long. */
const PROPFIND_MS = 150;

let broker: Broker;
let agent: Client;
let second: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  second = await broker.agent();
});
afterAll(async () => {
  await broker.close();
});
beforeEach(() => {
  broker.fake.reset();
});

/** A folder `name` with three subfolders, and a share `share` received from bob. */
async function scene(name: string, share: string): Promise<void> {
  for (const sub of ['a', 'b', 'c']) await broker.fake.writeFile(`${name}/${sub}/x.txt`, 'mine');
  await broker.fake.writeFile(`${share}/inner.txt`, 'from bob');
  await broker.fake.receiveShare(share, { owner: 'bob' });
  await broker.grant([
    { path: name, mode: 'write' },
    { path: share, mode: 'write' },
  ]);
}

/** Resolves once the fake has answered the Depth-1 PROPFIND of `folder` (the check read it). */
async function listed(folder: string): Promise<void> {
  const target = new URL(davUrl(broker.fake, `${folder}/`)).pathname;
  for (;;) {
    const seen = broker.fake.requests.some(
      (r) =>
        r.method === 'PROPFIND' &&
        r.headers.depth === '1' &&
        r.path.replace(/\/?$/, '/') === target &&
        r.status !== undefined,
    );
    if (seen) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Whether bob's share is still the owner's, at either place. */
async function shareSurvives(share: string, inside: string): Promise<boolean> {
  return (
    (await broker.fake.exists(`${share}/inner.txt`)) ||
    (await broker.fake.exists(`${inside}/${share}/inner.txt`))
  );
}

describe('attack: move a received share into a folder while its trash is being checked', () => {
  it('the move waits for the trash; the share is never unshared', async () => {
    await scene('Race', 'BobShared');
    broker.fake.faults.propfindDelayMs = PROPFIND_MS;
    const trashing = call(agent, 'trash', { instance: 'personal', path: 'Race' });
    // The check has read Race's children and is walking its subfolders.
    await listed('Race');
    const moved = await call(second, 'move', {
      instance: 'personal',
      from: 'BobShared',
      to: 'Race/BobShared',
    });
    const trashed = await trashing;
    expect(await shareSurvives('BobShared', 'Race')).toBe(true);
    // Served in order: the trash went first (Race is in the trash bin), so the move found
    // no folder to go into and the share stayed where it was.
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(moved).toMatchObject({ status: 'refused', code: 'not_found' });
    expect(await broker.fake.exists('BobShared/inner.txt')).toBe(true);
    expect(broker.fake.trashed()).toContain(trashed['trashed_as']);
  });

  it('a share the owner’s own client moves in during the check stops the trash', async () => {
    await scene('Outside', 'BobOutside');
    broker.fake.faults.propfindDelayMs = PROPFIND_MS;
    const trashing = call(agent, 'trash', { instance: 'personal', path: 'Outside' });
    await listed('Outside');
    // Not through the broker: the owner's desktop client, say.
    const moved = await dav(broker.fake, 'MOVE', 'BobOutside', {
      headers: { Destination: davUrl(broker.fake, 'Outside/BobOutside'), Overwrite: 'F' },
    });
    expect(moved.status).toBe(201);
    const trashed = await trashing;
    expect(trashed).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(trashed.message)).toContain('changed while the broker checked it');
    // Seen before the rename: nothing was renamed or trashed.
    const renamedOrDeleted = broker.fake.requests.filter(
      (r) => (r.method === 'MOVE' && r.path.endsWith('/Outside')) || r.method === 'DELETE',
    );
    expect(renamedOrDeleted).toEqual([]);
    expect(broker.fake.trashed().filter((p) => p.startsWith('Outside'))).toEqual([]);
    const outcome = broker
      .auditLines()
      .filter((l) => l.tool === 'trash' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'trash_unavailable' });
  });
});
