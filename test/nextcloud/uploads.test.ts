/**
 * Uploads that commit once (broker/nextcloud/uploads.ts, chunked.ts) against the fake
 * Nextcloud: which requests carry what, where the commit point is, and that a refused,
 * cut or mismatched upload leaves the destination unchanged and no upload folder behind.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../broker/base/log.js';
import { FOLDER_DELETE_RETRY_MS } from '../../broker/nextcloud/chunked.js';
import { nextSecond } from '../../fakes/nextcloud.js';
import type { NextcloudClient } from '../../broker/nextcloud/index.js';
import { body, DAV, rejectsWith, startRig, type Rig } from './helpers.js';

const CHUNK = 1024;
let rig: Rig;

beforeAll(async () => {
  rig = await startRig({ chunkSize: CHUNK, putLimit: CHUNK });
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

const sha1 = (b: Buffer | string): string => createHash('sha1').update(b).digest('hex');
const bytes = (n: number, fill: number): Buffer => Buffer.alloc(n, fill);
const methods = (): string[] => rig.sent().map((line) => line.split(' ')[0] ?? '');

/** Whether `check` holds within `ms` (polled). */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

/** An upload of 2500 bytes that the caller refuses at the commit point; returns what it threw. */
async function refusedAtCommit(
  client: NextcloudClient,
  path: string,
  condition: { ifMatch: string } | { ifNoneMatch: '*' },
): Promise<{ caught: unknown; refusal: Error }> {
  const refusal = new Error('revoked just now');
  const caught = await client
    .upload(path, body(bytes(2500, 7)), condition, 2500, {
      beforeCommit: () => {
        throw refusal;
      },
    })
    .catch((e: unknown) => e);
  return { caught, refusal };
}

/** A body that sends `first` bytes, then waits until `release` is called. */
function held(first: Buffer, rest: Buffer): { stream: Readable; release: () => void } {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const stream = Readable.from(
    (async function* () {
      yield first;
      await gate;
      yield rest;
    })(),
  );
  return { stream, release };
}

describe('a new file up to the chunk size: one create-only PUT', () => {
  it('sends If-None-Match: * and X-Hash: sha1 and answers the server hash', async () => {
    await rig.fake.mkdir('N');
    const content = bytes(CHUNK, 1);
    const written = await rig.client.upload(
      'N/one.bin',
      body(content),
      { ifNoneMatch: '*' },
      CHUNK,
    );
    expect(written).toMatchObject({ sha1: sha1(content), chunked: false });
    expect(methods()).toEqual(['PUT']);
  });

  it('a refusal at the commit point cuts the PUT before its last bytes: nothing is stored', async () => {
    await rig.fake.mkdir('N');
    const refusal = new Error('the grant ended');
    const caught = await rig.client
      .upload('N/refused.bin', body(bytes(500, 2)), { ifNoneMatch: '*' }, 500, {
        beforeCommit: () => {
          throw refusal;
        },
      })
      .catch((e: unknown) => e);
    expect(caught).toBe(refusal);
    expect(await rig.fake.exists('N/refused.bin')).toBe(false);
  });

  it('a slow check at the commit point: the server still lacks the last bytes, nothing is stored', async () => {
    await rig.fake.mkdir('N');
    // The check takes its time: long enough for any byte already sent to land and the
    // file to appear, were the last ones not held back.
    const caught = await rig.client
      .upload('N/slow.bin', body(bytes(700, 4)), { ifNoneMatch: '*' }, 700, {
        beforeCommit: async () => {
          const appeared = await within(300, () => rig.fake.exists('N/slow.bin'));
          throw new Error(appeared ? 'stored before the check' : 'refused');
        },
      })
      .catch((e: unknown) => e);
    expect((caught as Error).message).toBe('refused');
    expect(await rig.fake.exists('N/slow.bin')).toBe(false);
  });

  it('an empty file is checked before the PUT is sent at all', async () => {
    await rig.fake.mkdir('N');
    const caught = await rig.client
      .upload('N/empty.bin', body(Buffer.alloc(0)), { ifNoneMatch: '*' }, 0, {
        beforeCommit: () => {
          throw new Error('no');
        },
      })
      .catch((e: unknown) => e);
    expect((caught as Error).message).toBe('no');
    expect(methods()).toEqual([]);
    expect(await rig.fake.exists('N/empty.bin')).toBe(false);
  });
});

describe('chunked upload v2: bigger new files and every replacement', () => {
  it('a new file above the chunk size: MKCOL, chunks 1..N, one MOVE with Overwrite: F', async () => {
    await rig.fake.mkdir('C');
    const content = Buffer.concat([bytes(CHUNK, 3), bytes(CHUNK, 4), bytes(10, 5)]);
    const written = await rig.client.upload(
      'C/big.bin',
      body(content),
      { ifNoneMatch: '*' },
      content.length,
    );
    expect(written).toMatchObject({ sha1: sha1(content), chunked: true });
    const requests = rig.fake.requests;
    expect(requests.map((r) => r.method)).toEqual(['MKCOL', 'PUT', 'PUT', 'PUT', 'MOVE']);
    const destination = `${rig.fake.url}${DAV}/C/big.bin`;
    for (const r of requests) expect(r.headers['destination']).toBe(destination);
    expect(requests.slice(1, 4).map((r) => r.path.split('/').pop())).toEqual(['1', '2', '3']);
    const move = requests[4];
    expect(move?.path).toMatch(/^\/remote\.php\/dav\/uploads\/alice\/broker-[0-9a-f-]+\/\.file$/);
    expect(move?.headers).toMatchObject({
      overwrite: 'F',
      'oc-total-length': String(content.length),
      'x-hash': 'sha1',
    });
    expect(move?.headers['if-match']).toBeUndefined();
    expect(move?.headers['if-none-match']).toBeUndefined();
    expect((await rig.fake.readFile('C/big.bin'))?.equals(content)).toBe(true);
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a replacement of any size commits through a MOVE tagged with the fetched etag', async () => {
    await rig.fake.writeFile('C/doc.txt', 'old');
    const { etag } = await rig.client.stat('C/doc.txt');
    await nextSecond();
    const written = await rig.client.upload(
      'C/doc.txt',
      body('new!'),
      { ifMatch: etag as string },
      4,
    );
    expect(written).toMatchObject({ sha1: sha1('new!'), chunked: true });
    const move = rig.fake.requests.at(-1);
    expect(move?.headers['if']).toBe(`<${rig.fake.url}${DAV}/C/doc.txt> ([${etag as string}])`);
    expect((await rig.fake.readFile('C/doc.txt'))?.toString()).toBe('new!');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('replacing a version that changed since it was read: 412, unchanged, no folder left', async () => {
    await rig.fake.writeFile('C/race.txt', 'v1');
    const { etag } = await rig.client.stat('C/race.txt');
    await rig.fake.writeFile('C/race.txt', 'v2 by someone else');
    const err = await rejectsWith(
      rig.client.upload('C/race.txt', body('mine'), { ifMatch: etag as string }, 4),
      'precondition_failed',
    );
    expect(err.message).toContain('changed since it was fetched');
    expect((await rig.fake.readFile('C/race.txt'))?.toString()).toBe('v2 by someone else');
    expect(rig.fake.requests.at(-1)?.method).toBe('DELETE');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('replacing a file that was deleted since: refused as gone, nothing created', async () => {
    await rig.fake.writeFile('C/gone.txt', 'v1');
    const { etag } = await rig.client.stat('C/gone.txt');
    await rig.fake.writeFile('C/other.txt', 'x');
    await rig.client.trash('C/gone.txt');
    const err = await rejectsWith(
      rig.client.upload('C/gone.txt', body('mine'), { ifMatch: etag as string }, 4),
      'precondition_failed',
    );
    expect(err.message).toContain('no longer exists');
    expect(await rig.fake.exists('C/gone.txt')).toBe(false);
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a big create onto an existing file: 412 "exists", unchanged, no folder left', async () => {
    await rig.fake.writeFile('C/taken.bin', 'keep');
    await rejectsWith(
      rig.client.upload('C/taken.bin', body(bytes(3000, 6)), { ifNoneMatch: '*' }, 3000),
      'precondition_failed',
    );
    expect((await rig.fake.readFile('C/taken.bin'))?.toString()).toBe('keep');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a destination locked by another client: 423, unchanged, no folder left', async () => {
    await rig.fake.writeFile('C/locked.txt', 'theirs');
    await rig.fake.lockAs('C/locked.txt', { type: 'token' });
    const { etag } = await rig.client.stat('C/locked.txt');
    await rejectsWith(
      rig.client.upload('C/locked.txt', body('mine'), { ifMatch: etag as string }, 4),
      'locked',
    );
    expect((await rig.fake.readFile('C/locked.txt'))?.toString()).toBe('theirs');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a refusal at the commit point: no MOVE, the folder deleted, the destination unchanged', async () => {
    await rig.fake.writeFile('C/keep.txt', 'original');
    const { etag } = await rig.client.stat('C/keep.txt');
    const { caught, refusal } = await refusedAtCommit(rig.client, 'C/keep.txt', {
      ifMatch: etag as string,
    });
    expect(caught).toBe(refusal);
    expect(methods()).toEqual(['PROPFIND', 'MKCOL', 'PUT', 'PUT', 'PUT', 'DELETE']);
    expect((await rig.fake.readFile('C/keep.txt'))?.toString()).toBe('original');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('the abort signal cuts a chunk PUT in flight and the folder is deleted', async () => {
    await rig.fake.mkdir('C');
    const { stream, release } = held(bytes(CHUNK + 100, 8), bytes(CHUNK, 9));
    const controller = new AbortController();
    const pending = rig.client.upload('C/cut.bin', stream, { ifNoneMatch: '*' }, 2 * CHUNK + 100, {
      signal: controller.signal,
    });
    // The second chunk is under way (100 of its bytes sent, the rest held back).
    while (rig.fake.requests.filter((r) => r.method === 'PUT').length < 2)
      await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error('grant revoked'));
    await rejectsWith(pending, 'cancelled');
    release();
    expect(rig.fake.requests.map((r) => r.method)).not.toContain('MOVE');
    expect(await rig.fake.exists('C/cut.bin')).toBe(false);
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a body cut mid-chunk: aborted, nothing committed, no folder left', async () => {
    await rig.fake.writeFile('C/victim.bin', 'intact');
    const { etag } = await rig.client.stat('C/victim.bin');
    const failing = new Readable({
      read() {
        this.push(bytes(CHUNK + 10, 1));
        this.destroy(new Error('connection reset'));
      },
    });
    await rejectsWith(
      rig.client.upload('C/victim.bin', failing, { ifMatch: etag as string }, 3 * CHUNK),
      'aborted',
    );
    expect((await rig.fake.readFile('C/victim.bin'))?.toString()).toBe('intact');
    expect(rig.fake.requests.map((r) => r.method)).not.toContain('MOVE');
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('a DELETE refused while a cut chunk is cleaned up is sent again until the folder is gone', async () => {
    await rig.fake.writeFile('C/kept.txt', 'original');
    const { etag } = await rig.client.stat('C/kept.txt');
    rig.fake.faults.uploadDeleteForbidden = 2;
    const { caught, refusal } = await refusedAtCommit(rig.client, 'C/kept.txt', {
      ifMatch: etag as string,
    });
    expect(caught).toBe(refusal);
    expect(methods()).toEqual([
      'PROPFIND',
      'MKCOL',
      'PUT',
      'PUT',
      'PUT',
      'DELETE',
      'DELETE',
      'DELETE',
    ]);
    expect(rig.fake.uploadFolders()).toEqual([]);
    expect((await rig.fake.readFile('C/kept.txt'))?.toString()).toBe('original');
  });

  it('a folder the server keeps refusing to delete is logged, and the upload still answers its cause', async () => {
    const logger = memoryLogger();
    const client = rig.clientWith({ chunkSize: CHUNK, putLimit: CHUNK, logger });
    await rig.fake.mkdir('C');
    rig.fake.faults.uploadDeleteForbidden = FOLDER_DELETE_RETRY_MS.length + 1;
    try {
      const { caught, refusal } = await refusedAtCommit(client, 'C/new.bin', { ifNoneMatch: '*' });
      expect(caught).toBe(refusal);
    } finally {
      client.close();
    }
    const deletes = rig.sent().filter((line) => line.startsWith('DELETE '));
    expect(deletes).toHaveLength(FOLDER_DELETE_RETRY_MS.length + 1);
    expect(rig.fake.uploadFolders()).toHaveLength(1);
    const line = logger.lines.find((l) => l.includes('could not delete an upload folder'));
    expect(line).toContain(`"attempts":${FOLDER_DELETE_RETRY_MS.length + 1}`);
    expect(line).not.toContain(rig.fake.password);
    expect(await rig.fake.exists('C/new.bin')).toBe(false);
    // What Nextcloud's daily job would do, so later tests start without the folder.
    const [left] = rig.fake.uploadFolders();
    const auth = Buffer.from(`${rig.fake.user}:${rig.fake.password}`).toString('base64');
    const gone = await fetch(`${rig.fake.url}/remote.php/dav/uploads/${rig.fake.user}/${left}`, {
      method: 'DELETE',
      headers: { authorization: `Basic ${auth}` },
    });
    expect(gone.status).toBe(204);
  });

  it('a server that answers another hash of the assembled file: the upload returns it (for the caller to compare)', async () => {
    await rig.fake.writeFile('C/lie.txt', 'intact');
    const { etag } = await rig.client.stat('C/lie.txt');
    rig.fake.faults.xHash = 'wrong';
    const written = await rig.client.upload(
      'C/lie.txt',
      body('mine'),
      { ifMatch: etag as string },
      4,
    );
    expect(written.sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(written.sha1).not.toBe(sha1('mine'));
  });

  it('a server that answers no hash: the upload succeeds with sha1 null (for the caller to check)', async () => {
    await rig.fake.mkdir('C');
    rig.fake.faults.xHash = 'none';
    const written = await rig.client.upload(
      'C/nohash.bin',
      body(bytes(1500, 2)),
      { ifNoneMatch: '*' },
      1500,
    );
    expect(written).toMatchObject({ sha1: null, chunked: true });
  });

  it('more chunks than Nextcloud allows is refused before anything is sent', async () => {
    await rejectsWith(
      rig.client.upload('C/huge.bin', body('x'), { ifNoneMatch: '*' }, CHUNK * 10_001),
      'invalid_argument',
    );
    expect(methods()).toEqual([]);
  });
});
