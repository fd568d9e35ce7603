/**
 * The verbs that read what Nextcloud keeps beside the files, against the real server
 * (34, and 29 in real-oldest): the Activity stream paged from a mark, versions listed
 * and restored, the trash bin listed and restored (the place checked first: Nextcloud's
 * `Overwrite: F` is always 412), a delete inside a received share landing in both trash
 * bins, the calendar trash bin, and every answer's request id collected by the scope
 * that sent it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NextcloudClient, type NextcloudAnswer } from '../../broker/nextcloud/index.js';
import { Dav } from './dav.js';
import { createCalendar, removeCollection, uniqueName } from './groupware.js';
import { shareWith } from './rig.js';
import { realServer, type Account } from './server.js';

const server = realServer();
const clientOf = (account: Account): NextcloudClient =>
  new NextcloudClient({
    name: 'personal',
    url: server.url,
    username: account.user,
    app_password: account.password,
  });
const client = clientOf(server.owner);
const other = clientOf(server.other);
const owner = new Dav(server.url, server.owner);
const cal = uniqueName('undo');

/** A PUT that sets the file's mtime (as a sync client does), answering the file id. */
async function write(p: string, content: string, mtime: number): Promise<string> {
  const res = await fetch(`${server.url}/remote.php/dav/files/${server.owner.user}/${p}`, {
    method: 'PUT',
    headers: {
      Authorization: `Basic ${Buffer.from(`${server.owner.user}:${server.owner.password}`).toString('base64')}`,
      'X-OC-Mtime': String(mtime),
    },
    body: content,
  });
  expect(res.status).toBeLessThan(300);
  return /^0*(\d+)oc/.exec(res.headers.get('oc-fileid') ?? '')?.[1] ?? '';
}

async function mark(c: NextcloudClient = client): Promise<string> {
  const newest = (await c.activity({ sort: 'desc', limit: 1 })).activities[0]?.id;
  if (newest === undefined) throw new Error('no activity yet');
  return newest;
}

beforeAll(async () => {
  await server.reset();
  await removeCollection(server.url, server.owner, 'calendars', cal);
  await createCalendar(server, server.owner.user, cal);
});
afterAll(async () => {
  await removeCollection(server.url, server.owner, 'calendars', cal);
  client.close();
  other.close();
  await server.reset();
});

describe('the Activity stream (real server)', () => {
  it('pages a merged stream oldest first from a mark, until the last page', async () => {
    await client.mkdir('Act');
    const since = await mark();
    for (const name of ['a', 'b', 'c']) await write(`Act/${name}.txt`, name, 1_700_000_000);
    await client.move('Act/a.txt', 'Act/z.txt');
    // A plain DELETE (the broker's trash renames first: a `file_changed` entry of its own).
    expect((await owner.del('Act/b.txt')).status).toBe(204);
    await client.list('Act');
    const entries = [];
    let page = await client.activity({ since, sort: 'asc', limit: 2 });
    let pages = 1;
    entries.push(...page.activities);
    while (page.next !== undefined) {
      page = await client.activity({ since: page.next, sort: 'asc', limit: 2 });
      entries.push(...page.activities);
      pages += 1;
    }
    expect(pages).toBe(3);
    expect(entries.map((a) => [a.type, a.user, a.objects.map(([, p]) => p)])).toEqual([
      ['file_created', server.owner.user, ['/Act/a.txt', '/Act/b.txt']],
      ['file_created', server.owner.user, ['/Act/c.txt']],
      ['file_changed', server.owner.user, ['/Act/z.txt']],
      ['file_deleted', server.owner.user, ['/Act/b.txt']],
    ]);
    expect(entries[2]?.parameters['oldfile']?.path).toBe('Act/a.txt');
    const last = entries.at(-1)?.id ?? '';
    expect((await client.activity({ since: last, sort: 'asc' })).activities).toEqual([]);
  });

  it('refuses a cursor from another user’s stream as bad_cursor', async () => {
    await other.mkdir(`Theirs${Date.now()}`);
    const theirs = await mark(other);
    await expect(client.activity({ since: theirs })).rejects.toMatchObject({
      code: 'bad_cursor',
    });
  });
});

describe('versions (real server)', () => {
  it('lists entries by mtime, keeps the same-mtime overwrite in one entry, restores a version', async () => {
    await client.mkdir('Ver');
    const id = await write('Ver/v.txt', 'v1', 1_700_000_000);
    await write('Ver/v.txt', 'v2-xx', 1_700_000_100);
    await write('Ver/v.txt', 'v3', 1_700_000_100);
    await write('Ver/v.txt', 'v4-yyy', 1_700_000_200);
    expect((await client.versions(id)).map((v) => [v.name, v.size])).toEqual([
      ['1700000000', 2],
      ['1700000100', 2],
      ['1700000200', 6],
    ]);
    const before = await client.stat('Ver/v.txt');
    await client.restoreVersion(id, '1700000000');
    const after = await client.stat('Ver/v.txt');
    expect(Date.parse(after.modified ?? '')).toBe(1_700_000_000_000);
    expect(after.etag).not.toBe(before.etag);
    expect(await owner.read('Ver/v.txt')).toBe('v1');
    expect((await client.versions(id)).map((v) => [v.name, v.size])).toEqual([
      ['1700000000', 2],
      ['1700000100', 2],
      ['1700000200', 6],
    ]);
    await expect(client.restoreVersion(id, '1600000000')).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});

describe('the trash bin (real server)', () => {
  it('restores an item where it was, refuses a taken place, and puts one whose folder is gone at the root', async () => {
    await client.mkdir('Tr');
    await client.mkdir('Tr/G');
    await write('Tr/t.txt', 'first', 1_700_000_000);
    await write('Tr/G/g.txt', 'g', 1_700_000_000);
    // Each trashed under its unique name (trash.ts): that is where it comes back.
    const tAs = (await client.trash('Tr/t.txt')).renamed;
    const gAs = (await client.trash('Tr/G/g.txt')).renamed;
    await client.trash('Tr/G');
    const items = await client.trashbin();
    const t = items.find((i) => i.original === tAs);
    const g = items.find((i) => i.original === gAs);
    if (t === undefined || g === undefined) throw new Error('not in the trash bin');
    expect(t).toMatchObject({ kind: 'file', size: 5 });
    expect(t.item).toMatch(/^t \(trashed [a-z2-7]{8}\)\.txt\.d\d+$/);
    await write(tAs, 'second', 1_700_000_000);
    await expect(client.restoreTrash(t)).rejects.toMatchObject({ code: 'destination_exists' });
    expect(await owner.read(tAs)).toBe('second');
    const gName = gAs.split('/').pop() ?? '';
    expect(await client.restoreTrash(g)).toEqual({ path: gName });
    expect(await owner.read(gName)).toBe('g');
    // The place freed (moved away), the first t goes back there.
    await client.move(tAs, 'Tr/second.txt');
    expect(await client.restoreTrash(t)).toEqual({ path: tAs });
    expect(await owner.read(tAs)).toBe('first');
  });

  it('a delete by the receiving account inside a share lands in both trash bins', async () => {
    const folder = `Sh${Date.now()}`;
    await client.mkdir(folder);
    await write(`${folder}/in.txt`, 'shared', 1_700_000_000);
    await shareWith(server, 'owner', folder);
    // Trashed under its unique name (trash.ts): both trash bins list it as where it was.
    const { renamed } = await other.trash(`${folder}/in.txt`);
    const theirs = (await other.trashbin()).find((i) => i.original === renamed);
    const mine = (await client.trashbin()).find((i) => i.original === renamed);
    expect(theirs).toBeDefined();
    expect(mine).toBeDefined();
    // The receiving account's item is a copy with an id of its own.
    expect(theirs?.fileId).not.toBe(mine?.fileId);
  });
});

describe('the calendar trash bin (real server)', () => {
  it('trashes a created event, lists it by UID and restores it', async () => {
    const created = await client.createEvent(cal, {
      title: 'Undo me',
      start: Date.UTC(2026, 11, 10, 9),
      end: Date.UTC(2026, 11, 10, 10),
    });
    await client.trashEvent(cal, created.object);
    const item = (await client.calendarTrash()).find((i) =>
      i.uids.includes(created.event.uid ?? ''),
    );
    expect(item?.calendar).toBe(cal);
    if (item === undefined) return;
    const gone = await client.calendarEvents(cal, {
      start: Date.UTC(2026, 11, 10),
      end: Date.UTC(2026, 11, 11),
    });
    expect(gone.events).toEqual([]);
    await client.restoreEvent(item.item);
    const events = await client.calendarEvents(cal, {
      start: Date.UTC(2026, 11, 10),
      end: Date.UTC(2026, 11, 11),
    });
    expect(events.events.map((e) => e.uid)).toContain(created.event.uid);
  });
});

describe('request ids (real server)', () => {
  it('collects the id of every answered request of a scope; a refused one shows none', async () => {
    const got: NextcloudAnswer[] = [];
    await client.recording(
      (a) => got.push(a),
      async () => {
        await client.mkdir('Ids');
        // Another client's request in the same scope is not the broker's: not collected.
        await write('Ids/a.txt', 'a', 1_700_000_000);
        await client.stat('Ids/a.txt');
        await client.stat('Ids/missing.txt').catch(() => undefined);
      },
    );
    expect(got.map((a) => [a.method, a.status])).toEqual([
      ['MKCOL', 201],
      ['PROPFIND', 207],
    ]);
    for (const a of got) expect(a.requestId).toMatch(/^[A-Za-z0-9@_.+=/-]{1,128}$/);
    expect(got[0]?.fileId).toMatch(/^\d+$/);
    expect(new Set(got.map((a) => a.requestId)).size).toBe(2);
  });
});
