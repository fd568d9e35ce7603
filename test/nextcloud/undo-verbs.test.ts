/**
 * The Nextcloud verbs undo adds, against the fake over real sockets (test/real/undo.test.ts
 * holds the same to 34 and 29): whether a version name holds a saved content or only
 * stands for the current one (versionSaved), an event's ETag (eventEtag), and the file
 * ids a folder's creation, a move and an upload answer with.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rejectsWith, startRig, writeAt, type Rig } from './helpers.js';

let rig: Rig;
let n = 0;
let dir: string;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(async () => {
  rig.fake.reset();
  dir = `u${++n}`;
  await rig.fake.mkdir(dir);
});

/** A PUT that sets the file's mtime, as another client writes; the file id. */
const write = (path: string, content: string, mtime: number): Promise<string> =>
  writeAt(rig.fake, path, content, mtime);

describe('versionSaved', () => {
  it('tells a saved version from the entry of the current content, before and after a restore', async () => {
    const id = await write(`${dir}/v.txt`, 'one', 1_700_000_000);
    await write(`${dir}/v.txt`, 'two', 1_700_000_100);
    expect(await rig.client.versionSaved(id, '1700000000')).toBe(true);
    expect(await rig.client.versionSaved(id, '1700000100')).toBe(false);
    await rig.client.restoreVersion(id, '1700000000');
    // Its file was taken into place: the first read is a 500, asked again it is 404.
    expect(await rig.client.versionSaved(id, '1700000000')).toBe(false);
    expect(await rig.client.versionSaved(id, '1700000000')).toBe(false);
    expect(await rig.client.versionSaved(id, '1700000100')).toBe(true);
  });

  it('asks for two bytes and drops the connection: a large version is not read', async () => {
    const id = await write(`${dir}/big.bin`, 'x'.repeat(1_000_000), 1_700_000_000);
    await write(`${dir}/big.bin`, 'small', 1_700_000_100);
    rig.sent();
    expect(await rig.client.versionSaved(id, '1700000000')).toBe(true);
    const [get] = rig.fake.requests.slice(-1);
    expect(get?.headers['range']).toBe('bytes=0-1');
  });

  it('keeps no version of an empty content', async () => {
    const id = await write(`${dir}/e.txt`, '', 1_700_000_000);
    await write(`${dir}/e.txt`, 'filled', 1_700_000_100);
    expect((await rig.client.versions(id)).map((v) => v.name)).toEqual(['1700000100']);
    expect(await rig.client.versionSaved(id, '1700000000')).toBe(false);
  });
});

describe('the Versions app switched off', () => {
  it('capabilities no longer say versioning, nothing is kept, the versions are 404', async () => {
    const id = await write(`${dir}/o.txt`, 'one', 1_700_000_000);
    rig.fake.faults.versions = false;
    try {
      expect((await rig.client.capabilities()).versioning).toBe(false);
      await write(`${dir}/o.txt`, 'two', 1_700_000_100);
      await rejectsWith(rig.client.versions(id), 'not_found');
    } finally {
      rig.fake.faults.versions = true;
    }
    // What was written while it was off left no version.
    expect((await rig.client.versions(id)).map((v) => v.name)).toEqual(['1700000000']);
  });
});

describe('eventEtag', () => {
  it('is the ETag the creation read back; null once the event is gone', async () => {
    rig.fake.createCalendar(`cal${n}`);
    const created = await rig.client.createEvent(`cal${n}`, {
      title: 'Mine',
      start: Date.UTC(2026, 11, 10, 9),
      end: Date.UTC(2026, 11, 10, 10),
    });
    expect(await rig.client.eventEtag(`cal${n}`, created.object)).toBe(created.etag);
    await rig.client.trashEvent(`cal${n}`, created.object);
    expect(await rig.client.eventEtag(`cal${n}`, created.object)).toBeNull();
  });
});

describe('file ids in answers', () => {
  it('a new folder, a move and an upload name the item they made or moved', async () => {
    const { fileId: folder } = await rig.client.mkdir(`${dir}/F`);
    expect(folder).toMatch(/^\d+$/);
    const written = await rig.client.upload(
      `${dir}/F/a.txt`,
      Readable.from([Buffer.from('abc')]),
      { ifNoneMatch: '*' },
      3,
    );
    expect(written.fileId).toMatch(/^\d+$/);
    const moved = await rig.client.move(`${dir}/F/a.txt`, `${dir}/b.txt`);
    expect(moved.fileId).toBe(written.fileId);
    expect((await rig.client.stat(`${dir}/b.txt`)).fileId).toBe(written.fileId);
  });
});
