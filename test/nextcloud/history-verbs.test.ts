/**
 * The verbs that read what Nextcloud keeps beside the files, against the fake over real
 * sockets: the Activity stream (paging, merging, another user's cursor), a file's
 * versions, the trash bin and the calendar trash bin (docs/nextcloud-behaviour.md).
 * test/real/history-verbs.test.ts runs the same on the real servers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ownerDeletes } from '../../support/fake-requests.js';
import { rejectsWith, startRig, writeAt, type Rig } from './helpers.js';

let rig: Rig;
let n = 0;
/** A fresh folder per test. */
let dir: string;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(async () => {
  rig.fake.reset();
  dir = `h${++n}`;
  await rig.fake.mkdir(dir);
  rig.sent();
});

/** A PUT that sets the file's mtime, as another client writes; the file id. */
const write = (path: string, content: string, mtime: number): Promise<string> =>
  writeAt(rig.fake, path, content, mtime);

/** The newest activity id now (a mark: later pages start after it). */
async function mark(): Promise<string> {
  const page = await rig.client.activity({ sort: 'desc', limit: 1 });
  const newest = page.activities[0]?.id;
  if (newest === undefined) throw new Error('no activity yet');
  return newest;
}

describe('the Activity stream', () => {
  it('pages oldest first from a mark, following next until the last page', async () => {
    await rig.client.mkdir(`${dir}/m`);
    const since = await mark();
    for (const name of ['a', 'b', 'c', 'd']) await write(`${dir}/${name}.txt`, name, 1_700_000_000);
    // A plain DELETE (the broker's trash renames first: a `file_changed` entry of its own).
    expect(await ownerDeletes(rig.fake, rig.fake.password, `${dir}/a.txt`)).toBe(204);
    const first = await rig.client.activity({ since, sort: 'asc', limit: 3 });
    expect(first.next).toMatch(/^\d+$/);
    expect(first.activities.map((a) => [a.type, a.user, a.objects.map(([, p]) => p)])).toEqual([
      ['file_created', 'alice', [`/${dir}/a.txt`, `/${dir}/b.txt`, `/${dir}/c.txt`]],
    ]);
    const second = await rig.client.activity({ since: first.next, sort: 'asc', limit: 3 });
    expect(second.next).toBeUndefined();
    expect(second.activities.map((a) => [a.type, a.objectName])).toEqual([
      ['file_created', `/${dir}/d.txt`],
      ['file_deleted', `/${dir}/a.txt`],
    ]);
    // The merged entry carries its newest change's id and object.
    expect(first.activities[0]?.objectName).toBe(`/${dir}/c.txt`);
    expect(first.activities[0]?.time).toBeGreaterThan(0);
    const last = second.activities[1]?.id ?? '';
    expect(await rig.client.activity({ since: last, sort: 'asc' })).toMatchObject({
      activities: [],
      next: undefined,
    });
  });

  it('records reads as nothing, a move with its old path, and another user’s change as theirs', async () => {
    await write(`${dir}/x.txt`, 'x', 1_700_000_000);
    const since = await mark();
    await rig.client.list(dir);
    await rig.client.move(`${dir}/x.txt`, `${dir}/y.txt`);
    await rig.fake.writeFile(`${dir}/y.txt`, 'theirs', { by: 'bob' });
    const page = await rig.client.activity({ since, sort: 'asc' });
    expect(page.activities.map((a) => [a.type, a.user, a.template])).toEqual([
      ['file_changed', 'alice', 'You renamed {oldfile} to {newfile}'],
      ['file_changed', 'bob', '{user} changed {file}'],
    ]);
    expect(page.activities[0]?.parameters['oldfile']?.path).toBe(`${dir}/x.txt`);
    expect(page.activities[0]?.objectId).toMatch(/^\d+$/);
  });

  it('refuses a cursor from another user’s stream (403) as bad_cursor', async () => {
    await rig.fake.mkdir(`${dir}/S`);
    await rig.fake.receiveShare(`${dir}/S`, { owner: 'bob' });
    await write(`${dir}/S/in.txt`, 'in', 1_700_000_000);
    const own = await mark();
    // Ids are global: the sharer's row for the same change is the next one.
    const theirs = String(Number(own) + 1);
    await rejectsWith(rig.client.activity({ since: theirs }), 'bad_cursor');
  });

  it('refuses a malformed query before sending anything', async () => {
    await rejectsWith(rig.client.activity({ limit: 0 }), 'invalid_argument');
    await rejectsWith(rig.client.activity({ limit: 201 }), 'invalid_argument');
    await rejectsWith(rig.client.activity({ since: '12&sort=desc' }), 'invalid_argument');
    expect(rig.sent()).toEqual([]);
  });
});

describe('versions', () => {
  it('lists entries by mtime and restores one: the file keeps its id and takes its mtime', async () => {
    const id = await write(`${dir}/v.txt`, 'v1', 1_700_000_000);
    await write(`${dir}/v.txt`, 'v2-xx', 1_700_000_100);
    await write(`${dir}/v.txt`, 'v3-yyy', 1_700_000_200);
    expect(await rig.client.versions(id)).toEqual([
      { name: '1700000000', mtime: 1_700_000_000_000, size: 2 },
      { name: '1700000100', mtime: 1_700_000_100_000, size: 5 },
      { name: '1700000200', mtime: 1_700_000_200_000, size: 6 },
    ]);
    rig.sent();
    await rig.client.restoreVersion(id, '1700000000');
    const [move] = rig.fake.requests.slice(-1);
    expect(move?.method).toBe('MOVE');
    // Never `Overwrite: F`: the restore target always counts as existing (412).
    expect(move?.headers['overwrite']).toBeUndefined();
    expect((await rig.fake.readFile(`${dir}/v.txt`))?.toString()).toBe('v1');
    const after = await rig.client.stat(`${dir}/v.txt`);
    expect(Date.parse(after.modified ?? '')).toBe(1_700_000_000_000);
    expect((await rig.client.versions(id)).map((v) => [v.name, v.size])).toEqual([
      ['1700000000', 2],
      ['1700000100', 5],
      ['1700000200', 6],
    ]);
  });

  it('answers not_found for a version that is gone and for an id no file has', async () => {
    const id = await write(`${dir}/w.txt`, 'w', 1_700_000_000);
    await rejectsWith(rig.client.restoreVersion(id, '1600000000'), 'not_found');
    await rejectsWith(rig.client.versions('999999999'), 'not_found');
    await rejectsWith(rig.client.versions('../1'), 'invalid_argument');
  });
});

describe('the trash bin', () => {
  it('lists an item with where it was, and restores it there', async () => {
    await write(`${dir}/t.txt`, 'trash me', 1_700_000_000);
    // Trashed under its unique name (trash.ts), which the trash bin lists as where it was.
    const { renamed } = await rig.client.trash(`${dir}/t.txt`);
    const item = (await rig.client.trashbin()).find((i) => i.original === renamed);
    expect(item).toMatchObject({ kind: 'file', size: 8 });
    expect(item?.name).toMatch(/^t \(trashed [a-z2-7]{8}\)\.txt$/);
    expect(item?.item).toMatch(/^t \(trashed [a-z2-7]{8}\)\.txt\.d\d+$/);
    if (item === undefined) return;
    expect(await rig.client.restoreTrash(item)).toEqual({ path: renamed });
    expect((await rig.fake.readFile(renamed))?.toString()).toBe('trash me');
  });

  it('refuses to restore onto a taken place and sends no MOVE', async () => {
    await write(`${dir}/t.txt`, 'old', 1_700_000_000);
    const { renamed } = await rig.client.trash(`${dir}/t.txt`);
    // Another client takes the place it would come back to.
    await write(renamed, 'new', 1_700_000_000);
    const item = (await rig.client.trashbin()).find((i) => i.original === renamed);
    if (item === undefined) throw new Error('not in the trash bin');
    rig.sent();
    await rejectsWith(rig.client.restoreTrash(item), 'destination_exists');
    expect(rig.sent().some((r) => r.startsWith('MOVE'))).toBe(false);
    expect((await rig.fake.readFile(renamed))?.toString()).toBe('new');
    expect(rig.fake.trashed()).toContain(renamed);
  });

  it('restores into the root when the folder is gone', async () => {
    await rig.fake.mkdir(`${dir}/G`);
    await write(`${dir}/G/g${n}.txt`, 'g', 1_700_000_000);
    const { renamed } = await rig.client.trash(`${dir}/G/g${n}.txt`);
    await rig.client.trash(`${dir}/G`);
    const item = (await rig.client.trashbin()).find((i) => i.original === renamed);
    if (item === undefined) throw new Error('not in the trash bin');
    expect(await rig.client.restoreTrash(item)).toEqual({ path: renamed.split('/').pop() });
  });
});

describe('the calendar trash bin', () => {
  it('moves a created event there, lists it by UID and restores it', async () => {
    rig.fake.createCalendar(`cal${n}`);
    const created = await rig.client.createEvent(`cal${n}`, {
      title: 'Undo me',
      start: Date.UTC(2026, 11, 10, 9),
      end: Date.UTC(2026, 11, 10, 10),
    });
    await rig.client.trashEvent(`cal${n}`, created.object);
    expect(rig.fake.objectOf('calendar', `cal${n}`, created.object)).toBeUndefined();
    const item = (await rig.client.calendarTrash()).find((i) => i.calendar === `cal${n}`);
    expect(item?.uids).toEqual([created.event.uid]);
    expect(item?.item).toMatch(/^\d+\.ics$/);
    if (item === undefined) return;
    await rig.client.restoreEvent(item.item);
    expect(rig.fake.objectOf('calendar', `cal${n}`, created.object)).toContain('Undo me');
  });

  it('refuses a restore onto a taken name, and a second delete of a name in the trash bin', async () => {
    rig.fake.createCalendar(`cal${n}`);
    rig.fake.addObject(
      'calendar',
      `cal${n}`,
      'e.ics',
      'BEGIN:VCALENDAR\r\nUID:one\r\nEND:VCALENDAR\r\n',
    );
    await rig.client.trashEvent(`cal${n}`, 'e.ics');
    rig.fake.addObject(
      'calendar',
      `cal${n}`,
      'e.ics',
      'BEGIN:VCALENDAR\r\nUID:two\r\nEND:VCALENDAR\r\n',
    );
    const item = (await rig.client.calendarTrash()).find((i) => i.calendar === `cal${n}`);
    if (item === undefined) throw new Error('not in the calendar trash bin');
    await rejectsWith(rig.client.restoreEvent(item.item), 'destination_exists');
    await rejectsWith(rig.client.trashEvent(`cal${n}`, 'e.ics'), 'exists');
    expect(rig.fake.objectOf('calendar', `cal${n}`, 'e.ics')).toContain('UID:two');
  });
});
