/**
 * Attack, on a real Nextcloud (34, and 29 in the oldest-series run): two trashes of one
 * name within one second lose one for good. Nextcloud names a trashed item
 * `NAME.d<seconds>`, and a second delete of that NAME in the same second unlinks the
 * first entry (files_trashbin `Trashbin::move2trash`; the differential case shows it on
 * the server itself). The agent's two `trash` calls in a row, and one beside the owner's
 * own delete of that name, must each leave a restorable entry holding its content.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/mcp.js';
import { useRealRig } from './rig.js';

const rig = useRealRig();

async function twoFiles(root: string): Promise<void> {
  await rig.owner.writeFile(`${root}/A/x.txt`, `content of ${root}/A`);
  await rig.owner.writeFile(`${root}/B/x.txt`, `content of ${root}/B`);
  await rig.broker.grant([{ path: root, mode: 'write' }]);
}

/** Restores a trash entry (back to where it was trashed from, under that name) and reads it. */
async function restored(entry: string, trashedAs: string): Promise<string | undefined> {
  expect(await rig.owner.restore(entry, entry.replace(/\.d\d+$/, ''))).toBe(201);
  return rig.owner.read(trashedAs);
}

const trash = (path: string) => call(rig.agent, 'trash', { instance: 'personal', path });

describe('attack: two trashes of one name in one second (real server)', () => {
  it('the agent trashes A/x.txt and B/x.txt in a row: two entries, each restorable with its content', async () => {
    await twoFiles('Row');
    const [first, second] = [await trash('Row/A/x.txt'), await trash('Row/B/x.txt')];
    expect(first).toMatchObject({ status: 'ok' });
    expect(second).toMatchObject({ status: 'ok' });
    const entries = await rig.owner.trash();
    const of = (trashedAs: unknown) => entries.find((e) => e.original === trashedAs);
    const a = of(first['trashed_as']);
    const b = of(second['trashed_as']);
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    // The audit outcome names each entry as the trash bin does: what undo restores.
    const records = rig.broker
      .auditLines()
      .filter((l) => l.tool === 'trash' && l.event === 'outcome')
      .map((l) => l['trash'] as { name: string; original: string });
    expect(records.map((r) => r.name).sort()).toEqual([a?.item, b?.item].sort());
    expect(records.map((r) => r.original)).toEqual(['Row/A/x.txt', 'Row/B/x.txt']);
    expect(await restored(String(a?.item), String(first['trashed_as']))).toBe('content of Row/A');
    expect(await restored(String(b?.item), String(second['trashed_as']))).toBe('content of Row/B');
  });

  it('the agent’s trash of A/x.txt and the owner’s delete of B/x.txt at once: both kept', async () => {
    await twoFiles('Both');
    const [trashed, deleted] = await Promise.all([
      trash('Both/A/x.txt'),
      rig.owner.del('Both/B/x.txt'),
    ]);
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(deleted.status).toBe(204);
    const originals = (await rig.owner.trash()).map((e) => e.original);
    expect(originals).toEqual(expect.arrayContaining([trashed['trashed_as'], 'Both/B/x.txt']));
  });
});
