/**
 * Every client verb against the fake Nextcloud over real sockets, one `describe` per
 * behaviour of docs/nextcloud-behaviour.md ("F<n>" names the observation).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { body, DAV, readAll, rejectsWith, startRig, type Rig } from './helpers.js';
import { nextSecond } from '../../fakes/nextcloud.js';

const SHA1_ABC = 'a9993e364706816aba3e25717850c26c9cd0d89d';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

describe('F1 PROPFIND: list and stat', () => {
  beforeAll(async () => {
    await rig.fake.writeFile('L/b.txt', 'bbb');
    await rig.fake.writeFile('L/a.txt', 'a');
    await rig.fake.mkdir('L/Zed');
    await rig.fake.writeFile('L/L/inner.txt', 'x');
  });

  it('lists a folder: own entry dropped by href, folders first, code point order', async () => {
    const { entries, next } = await rig.client.list('L');
    expect(next).toBeUndefined();
    expect(entries.map((e) => [e.name, e.kind, e.size])).toEqual([
      ['L', 'folder', null],
      ['Zed', 'folder', null],
      ['a.txt', 'file', 1],
      ['b.txt', 'file', 3],
    ]);
    expect(entries[2]?.path).toBe('L/a.txt');
    expect(entries[2]?.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(entries[2]?.modified).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('sends Depth 1 (never infinity) with an explicit prop allow-list', async () => {
    await rig.client.list('L');
    const req = rig.fake.requests.at(-1);
    expect(req?.method).toBe('PROPFIND');
    expect(req?.headers['depth']).toBe('1');
    expect(req?.path).toBe(`${DAV}/L`);
  });

  it('lists the root', async () => {
    const { entries } = await rig.client.list('');
    expect(entries.map((e) => e.name)).toContain('L');
    expect(rig.sent()).toEqual([`PROPFIND ${DAV}/`]);
  });

  it('pages with a signed cursor', async () => {
    const first = await rig.client.list('L', undefined, 3);
    expect(first.entries.map((e) => e.name)).toEqual(['L', 'Zed', 'a.txt']);
    expect(first.next).toBeDefined();
    const second = await rig.client.list('L', first.next, 3);
    expect(second.entries.map((e) => e.name)).toEqual(['b.txt']);
    expect(second.next).toBeUndefined();
    // A cursor survives a restart (a new client with the same password)...
    const again = await rig.clientWith().list('L', first.next, 3);
    expect(again.entries.map((e) => e.name)).toEqual(['b.txt']);
  });

  it('refuses a cursor for another folder or a tampered one, without a request', async () => {
    const { next } = await rig.client.list('L', undefined, 1);
    rig.sent();
    await rejectsWith(rig.client.list('L/Zed', next, 1), 'bad_cursor', false);
    await rejectsWith(rig.client.list('L', `${next}x`, 1), 'bad_cursor', false);
    await rejectsWith(rig.clientWith({}, 'other').list('L', next, 1), 'bad_cursor', false);
    expect(rig.sent()).toEqual([]);
  });

  it('refuses bad page sizes', async () => {
    await rejectsWith(rig.client.list('L', undefined, 0), 'invalid_argument');
    await rejectsWith(rig.client.list('L', undefined, 1.5), 'invalid_argument');
    await rejectsWith(rig.client.list('L', undefined, 100_000), 'invalid_argument');
  });

  it('stat with Depth 0', async () => {
    expect(await rig.client.stat('L/b.txt')).toMatchObject({
      name: 'b.txt',
      path: 'L/b.txt',
      kind: 'file',
      size: 3,
    });
    expect(rig.fake.requests.at(-1)?.headers['depth']).toBe('0');
    expect((await rig.client.stat('L/Zed')).kind).toBe('folder');
  });

  it('list of a file is not_folder; list or stat of a missing path is not_found', async () => {
    await rejectsWith(rig.client.list('L/a.txt'), 'not_folder', false);
    await rejectsWith(rig.client.list('Nope'), 'not_found', false);
    await rejectsWith(rig.client.stat('L/nope.txt'), 'not_found', false);
  });

  it('the root is for list only', async () => {
    for (const run of [
      () => rig.client.stat(''),
      () => rig.client.readStream(''),
      () => rig.client.mkdir(''),
      () => rig.client.trash(''),
      () => rig.client.upload('', body('x'), { ifNoneMatch: '*' }, 1),
      () => rig.client.move('', 'x'),
      () => rig.client.lock('', 60),
    ])
      await rejectsWith(run(), 'invalid_path');
    expect(rig.sent()).toEqual([]);
  });
});

describe('F2-F5 PUT', () => {
  it('F2 creates (201) and replaces (204), returning the new etag', async () => {
    await rig.fake.mkdir('P');
    const created = await rig.client.upload('P/new.txt', body('one'), { ifNoneMatch: '*' }, 3);
    expect(created.etag).toMatch(/^"[0-9a-f]+"$/);
    expect((await rig.fake.readFile('P/new.txt'))?.toString()).toBe('one');
    // An overwrite within the same second would keep the etag (as on Nextcloud).
    await nextSecond();
    const replaced = await rig.client.upload(
      'P/new.txt',
      body('two!'),
      { ifMatch: created.etag as string },
      4,
    );
    expect(replaced.etag).not.toBe(created.etag);
    expect((await rig.fake.readFile('P/new.txt'))?.toString()).toBe('two!');
    expect((await rig.client.stat('P/new.txt')).etag).toBe(replaced.etag);
  });

  it('a new file is one PUT with If-None-Match: * and X-Hash: sha1, answered with the hash', async () => {
    await rig.fake.mkdir('P');
    const written = await rig.client.upload('P/hashed.txt', body('abc'), { ifNoneMatch: '*' }, 3);
    const put = rig.fake.requests.find((r) => r.method === 'PUT');
    expect(put?.headers['if-none-match']).toBe('*');
    expect(put?.headers['x-hash']).toBe('sha1');
    expect(put?.headers['content-length']).toBe('3');
    expect(written).toMatchObject({ sha1: SHA1_ABC, chunked: false });
    expect((await rig.fake.readFile('P/hashed.txt'))?.toString()).toBe('abc');
  });

  it('F3 create-only onto an existing file: 412 "exists", file unchanged', async () => {
    await rig.fake.writeFile('P/exists.txt', 'keep');
    const err = await rejectsWith(
      rig.client.upload('P/exists.txt', body('lost'), { ifNoneMatch: '*' }, 4),
      'precondition_failed',
      false,
    );
    expect(err.status).toBe(412);
    expect(err.message).toContain('exists');
    expect((await rig.fake.readFile('P/exists.txt'))?.toString()).toBe('keep');
  });

  it('F4 replace with a stale etag: 412 "changed since read"; If-Match on a missing file: 412', async () => {
    await rig.fake.writeFile('P/stale.txt', 'v1');
    const { etag } = await rig.client.stat('P/stale.txt');
    await rig.fake.writeFile('P/stale.txt', 'v2 by someone else');
    const err = await rejectsWith(
      rig.client.upload('P/stale.txt', body('mine'), { ifMatch: etag as string }, 4),
      'precondition_failed',
    );
    expect(err.message).toContain('changed since it was fetched');
    expect((await rig.fake.readFile('P/stale.txt'))?.toString()).toBe('v2 by someone else');
    await rejectsWith(
      rig.client.upload('P/missing.txt', body('x'), { ifMatch: '"abc"' }, 1),
      'precondition_failed',
    );
  });

  it('F5 into a missing parent folder: 404 naming the parent', async () => {
    const err = await rejectsWith(
      rig.client.upload('NoSuchDir/x.txt', body('x'), { ifNoneMatch: '*' }, 1),
      'not_found',
      false,
    );
    expect(err.message).toContain('parent folder');
  });

  it('refuses malformed conditions before sending', async () => {
    await rejectsWith(
      rig.client.upload('P/x', body('x'), { ifMatch: 'a\r\nX-Evil: 1' }, 1),
      'invalid_argument',
    );
    await rejectsWith(
      rig.client.upload('P/x', body('x'), { ifNoneMatch: 'x' as '*' }, 1),
      'invalid_argument',
    );
    await rejectsWith(
      rig.client.upload('P/x', body('x'), { lockToken: 'a>(b' }, 1),
      'invalid_argument',
    );
    await rejectsWith(
      rig.client.upload('P/x', body('x'), {} as { lockToken: string }, 1),
      'invalid_argument',
    );
    await rejectsWith(
      rig.client.upload('P/x', body('x'), { ifNoneMatch: '*' }, -1),
      'invalid_argument',
    );
    expect(rig.fake.requests.filter((r) => r.method === 'PUT')).toEqual([]);
  });

  it('a body shorter or longer than its size is aborted and replaces nothing', async () => {
    await rig.fake.writeFile('P/sized.txt', 'original');
    const { etag } = await rig.client.stat('P/sized.txt');
    await rejectsWith(
      rig.client.upload('P/sized.txt', body('short'), { ifMatch: etag as string }, 100),
      'aborted',
      true,
    );
    await rejectsWith(
      rig.client.upload('P/sized.txt', body('far too long'), { ifMatch: etag as string }, 3),
      'aborted',
      true,
    );
    expect((await rig.fake.readFile('P/sized.txt'))?.toString()).toBe('original');
  });

  it('a failing body stream is aborted', async () => {
    await rig.fake.mkdir('P');
    const { Readable } = await import('node:stream');
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('client went away'));
      },
    });
    await rejectsWith(
      rig.client.upload('P/failing.txt', failing, { ifNoneMatch: '*' }, 100),
      'aborted',
    );
    expect(await rig.fake.exists('P/failing.txt')).toBe(false);
  });
});

describe('F6-F8 GET', () => {
  beforeAll(async () => {
    await rig.fake.writeFile('G/data.bin', Buffer.from('0123456789'));
    await rig.fake.mkdir('G/folder');
  });

  it('streams a file with size and etag, in one GET', async () => {
    rig.sent();
    const { stream, size, etag } = await rig.client.readStream('G/data.bin');
    expect((await readAll(stream)).toString()).toBe('0123456789');
    expect(rig.sent().map((r) => r.split(' ')[0])).toEqual(['GET']);
    expect(size).toBe(10);
    expect(etag).toBe((await rig.client.stat('G/data.bin')).etag);
  });

  it('If-None-Match the current etag answers unchanged (304, no bytes); another etag streams', async () => {
    const { etag } = await rig.client.stat('G/data.bin');
    rig.fake.requests.length = 0;
    expect(await rig.client.readStream('G/data.bin', { ifNoneMatch: etag ?? '' })).toEqual({
      unchanged: true,
      etag,
    });
    const other = await rig.client.readStream('G/data.bin', { ifNoneMatch: '"0123456789abc"' });
    expect(other.unchanged).toBe(false);
    if (!other.unchanged) expect((await readAll(other.stream)).toString()).toBe('0123456789');
    expect(rig.fake.requests.map((r) => [r.method, r.headers['if-none-match']])).toEqual([
      ['GET', etag],
      ['GET', '"0123456789abc"'],
    ]);
  });

  it('F6 reads a range (206); an out-of-range start is 416', async () => {
    const { stream, size } = await rig.client.readStream('G/data.bin', {
      range: { start: 2, end: 5 },
    });
    expect((await readAll(stream)).toString()).toBe('2345');
    expect(size).toBe(4);
    expect(rig.fake.requests.at(-1)?.headers['range']).toBe('bytes=2-5');
    const open = await rig.client.readStream('G/data.bin', { range: { start: 7 } });
    expect((await readAll(open.stream)).toString()).toBe('789');
    await rejectsWith(
      rig.client.readStream('G/data.bin', { range: { start: 50 } }),
      'range_not_satisfiable',
      false,
    );
    await rejectsWith(
      rig.client.readStream('G/data.bin', { range: { start: 5, end: 2 } }),
      'invalid_argument',
    );
  });

  it('F7 refuses a folder: its GET is 200 text/html without an ETag, never handed out', async () => {
    rig.sent();
    await rejectsWith(rig.client.readStream('G/folder'), 'is_folder', false);
    await rejectsWith(
      rig.client.readStream('G/folder', { ifNoneMatch: '"x"' }),
      'is_folder',
      false,
    );
    expect(rig.sent().map((r) => r.split(' ')[0])).toEqual(['GET', 'PROPFIND', 'GET', 'PROPFIND']);
  });

  it('F8 a missing file is not_found, from the GET alone', async () => {
    rig.sent();
    await rejectsWith(rig.client.readStream('G/missing.bin'), 'not_found', false);
    expect(rig.sent().map((r) => r.split(' ')[0])).toEqual(['GET']);
  });
});

describe('F9 MKCOL', () => {
  it('201 new, 405 existing -> exists, 409 missing parent -> conflict', async () => {
    await rig.client.mkdir('M');
    expect(await rig.fake.exists('M')).toBe(true);
    await rejectsWith(rig.client.mkdir('M'), 'exists', false);
    const err = await rejectsWith(rig.client.mkdir('M/a/b'), 'conflict', false);
    expect(err.message).toContain('parent folder');
    // Never retried: one MKCOL per call.
    expect(rig.sent().filter((r) => r.startsWith('MKCOL'))).toHaveLength(3);
  });
});

describe('F10-F13 MOVE', () => {
  beforeEach(async () => {
    await rig.fake.writeFile('V/src.txt', 'source');
    await rig.fake.writeFile('V/taken.txt', 'target');
  });

  it('F10 moves to a free name (201) with Overwrite: F', async () => {
    await rig.client.move('V/src.txt', 'V/moved.txt');
    expect((await rig.fake.readFile('V/moved.txt'))?.toString()).toBe('source');
    expect(await rig.fake.exists('V/src.txt')).toBe(false);
    const move = rig.fake.requests.find((r) => r.method === 'MOVE');
    expect(move?.headers['overwrite']).toBe('F');
    expect(move?.headers['destination']).toBe(`${rig.fake.url}${DAV}/V/moved.txt`);
    await rig.client.move('V/moved.txt', 'V/src.txt');
  });

  it('F11 never overwrites: 412 -> destination_exists, both files intact', async () => {
    await rejectsWith(rig.client.move('V/src.txt', 'V/taken.txt'), 'destination_exists', false);
    expect((await rig.fake.readFile('V/taken.txt'))?.toString()).toBe('target');
    expect((await rig.fake.readFile('V/src.txt'))?.toString()).toBe('source');
    expect(rig.fake.trashed()).not.toContain('V/taken.txt');
  });

  it('F12 into a missing folder: 409 conflict; into its own subtree: refused unsent', async () => {
    await rejectsWith(rig.client.move('V/src.txt', 'Nowhere/x.txt'), 'conflict', false);
    rig.sent();
    await rig.fake.mkdir('V/dir');
    const err = await rejectsWith(rig.client.move('V/dir', 'V/dir/sub'), 'conflict', false);
    expect(err.message).toContain('own subtree');
    expect(rig.sent().filter((r) => r.startsWith('MOVE'))).toEqual([]);
  });

  it('F13 a Unicode-only rename is refused before sending: the source is not trashed', async () => {
    await rig.fake.writeFile('V/Caf\u00e9.txt', 'nfc');
    rig.sent();
    await rejectsWith(
      rig.client.move('V/Caf\u00e9.txt', 'V/Cafe\u0301.txt'),
      'invalid_path',
      false,
    );
    await rejectsWith(rig.client.move('V/Cafe\u0301.txt', 'V/Caf\u00e9.txt'), 'invalid_path');
    await rejectsWith(rig.client.move('V/src.txt', 'V/src.txt'), 'invalid_argument');
    expect(rig.sent()).toEqual([]);
    expect(await rig.fake.exists('V/Caf\u00e9.txt')).toBe(true);
    expect(rig.fake.trashed()).not.toContain('V/Caf\u00e9.txt');
  });
});

describe('F14 DELETE to the trash bin', () => {
  it('deletes into the trash bin (204); a repeat is not_found', async () => {
    await rig.fake.writeFile('T/old.txt', 'x');
    const trashed = await rig.client.trash('T/old.txt');
    expect(await rig.fake.exists('T/old.txt')).toBe(false);
    expect(trashed).toMatchObject({ state: 'trashed', original: 'T/old.txt' });
    expect(rig.fake.trashed()).toContain(trashed.renamed);
    await rejectsWith(rig.client.trash('T/old.txt'), 'not_found', false);
  });

  it('refuses without sending a DELETE when the trash bin is off', async () => {
    await rig.fake.writeFile('T/keep.txt', 'x');
    rig.fake.faults.trashbin = false;
    const err = await rejectsWith(rig.client.trash('T/keep.txt'), 'trash_disabled', false);
    expect(err.message).toContain('permanent');
    expect(rig.sent().filter((r) => r.startsWith('DELETE'))).toEqual([]);
    expect(await rig.fake.exists('T/keep.txt')).toBe(true);
  });

  it('asks for fresh capabilities before every delete (no stale cache)', async () => {
    await rig.fake.writeFile('T/fresh.txt', 'x');
    const client = rig.clientWith();
    expect((await client.capabilities()).undelete).toBe(true);
    rig.fake.faults.trashbin = false;
    await rejectsWith(client.trash('T/fresh.txt'), 'trash_disabled');
    expect(await rig.fake.exists('T/fresh.txt')).toBe(true);
  });
});

describe('F15-F17 names and encoding', () => {
  it('F15 names come back NFC; an NFD-spelled folder request is matched by its own href', async () => {
    await rig.fake.writeFile('N/Caf\u00e9/x.txt', 'x');
    const nfd = await rig.client.list('N/Cafe\u0301');
    expect(nfd.entries.map((e) => e.path)).toEqual(['N/Cafe\u0301/x.txt']);
    const listed = await rig.client.list('N');
    expect(listed.entries.map((e) => e.name)).toEqual(['Caf\u00e9']);
  });

  it('F16 decodes lowercase escapes, unencoded `:` and `%2b` in hrefs', async () => {
    // Also names the server accepts though Windows would not: reserved, trailing dot/space.
    const names = [
      'a+b.txt',
      'c:d.txt',
      'e f#g?.txt',
      'h%2Fi.txt',
      '\u00ff.txt',
      '\u{1F600}.txt',
      'CON',
      'dot.',
      'space ',
    ];
    for (const n of names) await rig.fake.writeFile(`E/${n}`, n);
    const { entries } = await rig.client.list('E');
    expect(entries.map((e) => e.name)).toEqual([...names].sort());
    for (const n of names) {
      const { stream } = await rig.client.readStream(`E/${n}`);
      expect((await readAll(stream)).toString()).toBe(n);
    }
  });

  it('F17 a literal %2F in a name is sent double-encoded, never as a separator', async () => {
    await rig.fake.mkdir('E2');
    await rig.client.upload('E2/x%2Fy', body('lit'), { ifNoneMatch: '*' }, 3);
    expect(rig.fake.requests.at(-1)?.path).toBe(`${DAV}/E2/x%252Fy`);
    expect((await rig.fake.readFile('E2/x%2Fy'))?.toString()).toBe('lit');
  });
});

describe('F18-F20 names the server refuses', () => {
  it('F18 backslash, control characters, dot segments: refused before sending', async () => {
    for (const p of ['a\\b', 'a\nb', 'a\u0000b', 'a/../b', 'a/./b', 'a//b', '/a'])
      await rejectsWith(rig.client.stat(p), 'invalid_path', false);
    expect(rig.sent()).toEqual([]);
  });

  it('F19 .htaccess is forbidden (403); a *.part name exists to a create-only PUT (412)', async () => {
    await rig.fake.mkdir('R');
    await rejectsWith(
      rig.client.upload('R/.htaccess', body('x'), { ifNoneMatch: '*' }, 1),
      'forbidden',
      false,
    );
    // Nextcloud treats any `*.part` path as an existing hidden file (the wall refuses
    // such names before they get here).
    await rejectsWith(
      rig.client.upload('R/x.part', body('x'), { ifNoneMatch: '*' }, 1),
      'precondition_failed',
    );
  });

  it('F20 names over 250 bytes, uploads of 228+ byte names, URLs over 4 KB: refused unsent', async () => {
    await rig.fake.mkdir('R');
    await rejectsWith(rig.client.stat(`R/${'n'.repeat(251)}`), 'invalid_path');
    await rejectsWith(
      rig.client.upload(`R/${'n'.repeat(228)}`, body('x'), { ifNoneMatch: '*' }, 1),
      'name_too_long',
      false,
    );
    await rejectsWith(
      rig.client.stat(Array.from({ length: 25 }, () => 'd'.repeat(200)).join('/')),
      'invalid_path',
    );
    expect(rig.sent()).toEqual([]);
    // 227 bytes still uploads.
    await rig.client.upload(`R/${'n'.repeat(227)}`, body('x'), { ifNoneMatch: '*' }, 1);
  });
});

describe('F21 token locks', () => {
  beforeEach(async () => {
    await rig.fake.writeFile('K/doc.txt', 'v1');
  });

  it('locks with a token; writes need it, even from the same user; unlock releases', async () => {
    const { token } = await rig.client.lock('K/doc.txt', 600);
    expect(token).toMatch(/^opaquelocktoken:/);
    const lockReq = rig.fake.requests.at(-1);
    expect(lockReq?.method).toBe('LOCK');
    expect(lockReq?.headers['timeout']).toBe('Second-600');
    expect(rig.fake.lockOf('K/doc.txt')).toMatchObject({ type: 'token', token });

    const { etag } = await rig.client.stat('K/doc.txt');
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('no token'), { ifMatch: etag as string }, 8),
      'locked',
      true,
    );
    await rejectsWith(rig.client.lock('K/doc.txt', 60), 'locked');
    await rejectsWith(rig.client.move('K/doc.txt', 'K/moved.txt'), 'locked');

    await nextSecond();
    const written = await rig.client.upload(
      'K/doc.txt',
      body('v2'),
      { ifMatch: etag as string, lockToken: token },
      2,
    );
    expect(written.etag).not.toBe(etag);
    // A replacement commits through a chunked upload's MOVE: the lock token and the
    // etag go into one If list tagged with the destination.
    const commit = rig.fake.requests.at(-1);
    expect(commit?.method).toBe('MOVE');
    expect(commit?.headers['if']).toBe(
      `<${rig.fake.url}${DAV}/K/doc.txt> (<${token}> [${etag as string}])`,
    );
    await rig.client.upload('K/doc.txt', body('v3'), { lockToken: token }, 2);
    expect((await rig.fake.readFile('K/doc.txt'))?.toString()).toBe('v3');
    // A token that does not hold while the file is locked: 423, the file is locked.
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('v4'), { lockToken: 'opaquelocktoken:stale' }, 2),
      'locked',
      true,
    );
    expect((await rig.fake.readFile('K/doc.txt'))?.toString()).toBe('v3');

    await rejectsWith(
      rig.client.unlock('K/doc.txt', 'opaquelocktoken:wrong'),
      'bad_lock_token',
      false,
    );
    await rig.client.unlock('K/doc.txt', token);
    expect(rig.fake.lockOf('K/doc.txt')).toBeUndefined();
    // Once nothing holds a lock, a stale token is 412: the lock no longer holds.
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('v4'), { lockToken: token }, 2),
      'bad_lock_token',
      false,
    );
  });

  it('a lock held by another client blocks our write (423 locked)', async () => {
    await rig.fake.lockAs('K/doc.txt', { type: 'token' });
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('x'), { ifNoneMatch: '*' }, 1),
      'precondition_failed',
    );
    const { etag } = await rig.client.stat('K/doc.txt');
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('x'), { ifMatch: etag as string }, 1),
      'locked',
    );
  });

  it('a user lock by another user blocks writes (423 locked, retry later)', async () => {
    await rig.fake.lockAs('K/doc.txt', { type: 'user', owner: 'bob' });
    const { etag } = await rig.client.stat('K/doc.txt');
    await rejectsWith(
      rig.client.upload('K/doc.txt', body('x'), { ifMatch: etag as string }, 1),
      'locked',
      true,
    );
    await rejectsWith(rig.client.lock('K/doc.txt', 60), 'locked');
  });

  it('refuses to lock a missing path (no LOCK sent, no file created) or a folder', async () => {
    await rejectsWith(rig.client.lock('K/missing.txt', 60), 'not_found', false);
    expect(rig.fake.requests.filter((r) => r.method === 'LOCK')).toEqual([]);
    expect(await rig.fake.exists('K/missing.txt')).toBe(false);
    await rig.fake.mkdir('K/dir');
    await rejectsWith(rig.client.lock('K/dir', 60), 'is_folder', false);
    expect(rig.fake.requests.filter((r) => r.method === 'LOCK')).toEqual([]);
  });

  it('refuses a bad timeout or token without sending', async () => {
    await rejectsWith(rig.client.lock('K/doc.txt', 0), 'invalid_argument');
    await rejectsWith(rig.client.lock('K/doc.txt', 1.5), 'invalid_argument');
    await rejectsWith(rig.client.unlock('K/doc.txt', 'x>y'), 'invalid_argument');
    expect(rig.sent()).toEqual([]);
  });

  it('F22 files_lock off: LOCK 501 -> locking_unavailable; capabilities say no locking', async () => {
    rig.fake.faults.filesLock = false;
    const err = await rejectsWith(rig.client.lock('K/doc.txt', 60), 'locking_unavailable', false);
    expect(err.message).toContain('files_lock');
    expect((await rig.clientWith().capabilities()).locking).toBe(false);
  });
});

describe('F23 OCS capabilities', () => {
  it('sends OCS-APIRequest and caches for 60 s on the injected clock', async () => {
    let now = 1_000_000;
    const client = rig.clientWith({ now: () => now });
    expect(await client.capabilities()).toMatchObject({ undelete: true, locking: true });
    const req = rig.fake.requests.at(-1);
    expect(req?.path).toBe('/ocs/v2.php/cloud/capabilities?format=json');
    expect(req?.headers['ocs-apirequest']).toBe('true');
    rig.fake.faults.trashbin = false;
    rig.sent();
    now += 59_999;
    expect((await client.capabilities()).undelete).toBe(true);
    expect(rig.sent()).toEqual([]);
    now += 1;
    expect((await client.capabilities()).undelete).toBe(false);
    expect(rig.sent()).toHaveLength(1);
  });
});
