/**
 * A new file goes up as one create-only PUT whatever its size (broker/nextcloud/uploads.ts);
 * only a size that one PUT cannot carry goes up in chunks, and the answer says why: the
 * owner's `transfer.put_limit`, or a 413 to the PUT's head (its body waits for `100
 * Continue`, so none of it was sent), remembered for later uploads. Replacements send
 * their chunks with several answers outstanding (chunk-answers.ts).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nextSecond } from '../../fakes/nextcloud.js';
import { body, startRig, type Rig } from './helpers.js';

const CHUNK = 1024;
let rig: Rig;

beforeAll(async () => {
  rig = await startRig({ chunkSize: CHUNK });
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

const sha1 = (b: Buffer | string): string => createHash('sha1').update(b).digest('hex');
const content = (n: number, seed: number): Buffer =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));
const methods = (): string[] => rig.fake.requests.map((r) => r.method);

describe('a new file of any size: one create-only PUT', () => {
  it('a file of many chunk sizes is one PUT, answered with the server hash', async () => {
    await rig.fake.mkdir('N');
    const data = content(5 * CHUNK + 7, 1);
    const written = await rig.client.upload(
      'N/big.bin',
      body(data),
      { ifNoneMatch: '*' },
      data.length,
    );
    expect(written).toEqual({
      etag: expect.any(String),
      sha1: sha1(data),
      fileId: expect.stringMatching(/^\d+$/),
      chunked: false,
    });
    expect(methods()).toEqual(['PUT']);
    expect(rig.fake.requests[0]?.headers).toMatchObject({
      'if-none-match': '*',
      expect: '100-continue',
    });
    expect((await rig.fake.readFile('N/big.bin'))?.equals(data)).toBe(true);
  });

  it('a refusal at the commit point still stores nothing, whatever the size', async () => {
    await rig.fake.mkdir('N');
    const refusal = new Error('revoked');
    const caught = await rig.client
      .upload('N/cut.bin', body(content(6 * CHUNK, 2)), { ifNoneMatch: '*' }, 6 * CHUNK, {
        beforeCommit: () => {
          throw refusal;
        },
      })
      .catch((e: unknown) => e);
    expect(caught).toBe(refusal);
    expect(await rig.fake.exists('N/cut.bin')).toBe(false);
  });
});

describe('a size one PUT cannot carry: chunks, and a warning saying why', () => {
  it('a 413 to the head: the same body goes up in chunks, and later big files at once', async () => {
    const client = rig.clientWith({ chunkSize: CHUNK });
    try {
      await rig.fake.mkdir('L');
      rig.fake.faults.putBodyLimit = 2 * CHUNK;
      const data = content(3 * CHUNK + 5, 3);
      const written = await client.upload('L/a.bin', body(data), { ifNoneMatch: '*' }, data.length);
      expect(written).toMatchObject({ sha1: sha1(data), chunked: true });
      expect(written.warning).toMatch(/refused one PUT of this size with 413.*chunked upload/);
      expect(methods()).toEqual(['PUT', 'MKCOL', 'PUT', 'PUT', 'PUT', 'PUT', 'MOVE']);
      expect(rig.fake.requests[0]?.status).toBe(413);
      expect((await rig.fake.readFile('L/a.bin'))?.equals(data)).toBe(true);

      rig.fake.requests.length = 0;
      const more = content(4 * CHUNK, 4);
      const again = await client.upload('L/b.bin', body(more), { ifNoneMatch: '*' }, more.length);
      expect(again.warning).toMatch(/refused one PUT of \d+ bytes, less than this size/);
      expect(methods()[0]).toBe('MKCOL');
      expect((await rig.fake.readFile('L/b.bin'))?.equals(more)).toBe(true);

      // Smaller than what was refused: still one PUT.
      rig.fake.requests.length = 0;
      const small = content(CHUNK, 5);
      const one = await client.upload('L/c.bin', body(small), { ifNoneMatch: '*' }, small.length);
      expect(one).toMatchObject({ chunked: false });
      expect(one.warning).toBeUndefined();
      expect(methods()).toEqual(['PUT']);
      expect(rig.fake.uploadFolders()).toEqual([]);
    } finally {
      client.close();
    }
  });

  it("above the owner's put_limit: chunks from the start, with a warning", async () => {
    const client = rig.clientWith({ chunkSize: CHUNK, putLimit: 2 * CHUNK });
    try {
      await rig.fake.mkdir('P');
      const data = content(2 * CHUNK + 1, 6);
      const written = await client.upload('P/a.bin', body(data), { ifNoneMatch: '*' }, data.length);
      expect(written).toMatchObject({ sha1: sha1(data), chunked: true });
      expect(written.warning).toMatch(/larger than transfer\.put_limit \(2048 bytes\)/);
      expect(methods()).toEqual(['MKCOL', 'PUT', 'PUT', 'PUT', 'MOVE']);
    } finally {
      client.close();
    }
  });
});

describe('a replacement: chunks with their answers awaited alongside', () => {
  it('many chunks arrive whole and in place; the MOVE comes after every answer', async () => {
    await rig.fake.writeFile('R/doc.bin', 'old');
    const { etag } = await rig.client.stat('R/doc.bin');
    await nextSecond();
    const data = content(9 * CHUNK + 3, 7);
    const written = await rig.client.upload(
      'R/doc.bin',
      body(data),
      { ifMatch: etag as string },
      data.length,
    );
    expect(written).toMatchObject({ sha1: sha1(data), chunked: true });
    const names = rig.fake.requests
      .filter((r) => r.method === 'PUT')
      .map((r) => Number(r.path.split('/').pop()));
    // Several are in flight at once, so they may arrive in any order (Nextcloud takes that).
    expect(names.sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(rig.fake.requests.at(-1)?.method).toBe('MOVE');
    expect(rig.fake.requests.filter((r) => r.method === 'PUT').every((r) => r.status === 201)).toBe(
      true,
    );
    expect((await rig.fake.readFile('R/doc.bin'))?.equals(data)).toBe(true);
    expect(rig.fake.uploadFolders()).toEqual([]);
  });

  it('only the MOVE asks for a hash (sha1, of the assembled file); the chunks ask none', async () => {
    await rig.fake.writeFile('R/keep.bin', 'old');
    const { etag } = await rig.client.stat('R/keep.bin');
    const data = content(6 * CHUNK, 8);
    const written = await rig.client.upload(
      'R/keep.bin',
      body(data),
      { ifMatch: etag as string },
      data.length,
    );
    const puts = rig.fake.requests.filter((r) => r.method === 'PUT');
    expect(puts).toHaveLength(6);
    for (const put of puts) expect(put.headers['x-hash']).toBeUndefined();
    expect(rig.fake.requests.at(-1)).toMatchObject({
      method: 'MOVE',
      headers: { 'x-hash': 'sha1' },
    });
    expect(written.sha1).toBe(sha1(data));
  });
});
