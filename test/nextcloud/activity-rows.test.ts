/**
 * The account's own Activity, one change per row (broker/nextcloud/activity-rows.ts),
 * against the fake over real sockets: the API merges back-to-back changes of a page into
 * one entry (docs/nextcloud-behaviour.md "The Activity app"), so a merged page is read
 * again row by row and a change never hides inside another's entry; a page shown to hold
 * one row per entry is taken as it is, in as few requests as that takes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DAV, startRig, type Rig } from './helpers.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
});

async function put(path: string, body: string): Promise<void> {
  const res = await fetch(`${rig.fake.url}${DAV}/${path}`, {
    method: 'PUT',
    headers: {
      Authorization: `Basic ${Buffer.from(`${rig.fake.user}:${rig.fake.password}`).toString('base64')}`,
    },
    body,
  });
  expect(res.status).toBeLessThan(300);
}

/** `{ since }` of the newest row now, or nothing when the stream is empty. */
async function newest(): Promise<{ since?: string }> {
  const page = await rig.client.activity({ filter: 'self', sort: 'desc', limit: 1 });
  return page.lastGiven === undefined ? {} : { since: page.lastGiven };
}

const activityRequests = (sent: string[]) => sent.filter((s) => s.includes('/apps/activity/'));

describe('a file changed three times in a row', () => {
  it('is one entry in the API and three rows here, each with its own id and time', async () => {
    await rig.fake.mkdir('R1');
    const since = await newest();
    for (const v of ['1', '2', '3']) await put('R1/same.txt', v);
    const merged = await rig.client.activity({ filter: 'self', ...since, sort: 'asc' });
    expect(merged.activities).toHaveLength(2); // created, then "changed" twice as one
    const read = await rig.client.activityRows({ ...since, sort: 'asc' });
    expect(read.rows.map((r) => [r.type, r.objectName])).toEqual([
      ['file_created', '/R1/same.txt'],
      ['file_changed', '/R1/same.txt'],
      ['file_changed', '/R1/same.txt'],
    ]);
    expect(new Set(read.rows.map((r) => r.id)).size).toBe(3);
    expect(read.next).toBeUndefined();
    expect(read.lastRead).toBe(read.rows.at(-1)?.id);
  });
});

describe('a page of different files', () => {
  it('is taken whole when shown to hold one row per entry: two requests, not one per row', async () => {
    await rig.fake.mkdir('R2');
    const since = await newest();
    await put('R2/a.txt', 'a');
    await rig.fake.mkdir('R2/sub'); // no activity: made outside a request
    const to = `${rig.fake.url}${DAV}/R2/b.txt`;
    await fetch(`${rig.fake.url}${DAV}/R2/a.txt`, {
      method: 'MOVE',
      headers: {
        Authorization: `Basic ${Buffer.from(`${rig.fake.user}:${rig.fake.password}`).toString('base64')}`,
        Destination: to,
      },
    });
    rig.sent();
    const read = await rig.client.activityRows({ ...since, sort: 'asc' });
    expect(read.rows.map((r) => r.type)).toEqual(['file_created', 'file_changed']);
    // The page, then the same page asked for its entries' count: no Link, so no merge.
    expect(activityRequests(rig.sent())).toHaveLength(2);
  });

  it('answers nothing new as an empty read that keeps its place', async () => {
    const since = await newest();
    const read = await rig.client.activityRows({ ...since, sort: 'asc' });
    expect(read).toMatchObject({ rows: [], next: undefined, lastRead: undefined });
  });
});
