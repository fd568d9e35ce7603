/** Facts file, "## The webdav client library (v5) against this server". */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Readable } from 'node:stream';
import { createClient, type WebDAVClient } from 'webdav';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';

let fake: FakeNextcloud;
let client: WebDAVClient;

beforeAll(async () => {
  fake = await startFakeNextcloud();
  client = createClient(`${fake.url}/remote.php/dav/files/${fake.user}`, {
    username: fake.user,
    password: fake.password,
  });
});
afterAll(async () => {
  await fake.close();
});

function statusOf(e: unknown): number | undefined {
  return (e as { status?: number }).status;
}

describe('putFileContents(path, data, { overwrite: false })', () => {
  it('sends If-None-Match: * and on the 412 returns false instead of throwing', async () => {
    await fake.writeFile('w/exists.txt', 'old');
    fake.reset();
    const result = await client.putFileContents('/w/exists.txt', 'new', { overwrite: false });
    expect(result).toBe(false);
    expect(fake.requests.at(-1)?.headers['if-none-match']).toBe('*');
    expect((await fake.readFile('w/exists.txt'))?.toString()).toBe('old');
    expect(await client.putFileContents('/w/fresh.txt', 'new', { overwrite: false })).toBe(true);
  });
});

describe('moveFile(from, to, { overwrite: false })', () => {
  it('throws with status 412 when the target exists', async () => {
    await fake.writeFile('m/a.txt', 'A');
    await fake.writeFile('m/b.txt', 'B');
    const err = await client
      .moveFile('/m/a.txt', '/m/b.txt', { overwrite: false })
      .catch((e: unknown) => e);
    expect(statusOf(err)).toBe(412);
    expect((await fake.readFile('m/b.txt'))?.toString()).toBe('B');
  });
});

describe('createDirectory on an existing folder', () => {
  it('throws 405 (it sends a trailing /)', async () => {
    await fake.mkdir('c/existing');
    fake.reset();
    const err = await client.createDirectory('/c/existing').catch((e: unknown) => e);
    expect(statusOf(err)).toBe(405);
    expect(fake.requests.at(-1)?.path.endsWith('/c/existing/')).toBe(true);
  });
});

describe('lock / put under the token / unlock', () => {
  it('lock(path, { timeout: "Second-600" }) returns { token: "opaquelocktoken:…", serverTimeout }', async () => {
    await fake.writeFile('k/doc.txt', 'v1');
    const lock = await client.lock('/k/doc.txt', { timeout: 'Second-600' });
    expect(lock.token).toMatch(/^opaquelocktoken:/);
    expect(lock.serverTimeout).toBe('Second-600');
    const without = await client.putFileContents('/k/doc.txt', 'no token').catch((e: unknown) => e);
    expect(statusOf(without)).toBe(423);
    await client.putFileContents('/k/doc.txt', 'v2', { headers: { If: `(<${lock.token}>)` } });
    expect((await fake.readFile('k/doc.txt'))?.toString()).toBe('v2');
    await client.unlock('/k/doc.txt', lock.token);
    expect(fake.lockOf('k/doc.txt')).toBeUndefined();
    await client.putFileContents('/k/doc.txt', 'v3');
    expect((await fake.readFile('k/doc.txt'))?.toString()).toBe('v3');
  });
});

describe('createReadStream', () => {
  it('streams a download and identifies itself as node-fetch', async () => {
    await fake.writeFile('s/big.bin', Buffer.alloc(300_000, 7));
    fake.reset();
    const chunks: Buffer[] = [];
    for await (const c of client.createReadStream('/s/big.bin') as Readable)
      chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(Buffer.alloc(300_000, 7))).toBe(true);
    expect(String(fake.requests.at(-1)?.headers['user-agent'])).toMatch(/node-fetch/);
  });
});

describe('getDirectoryContents and stat (Nextcloud allprop)', () => {
  it('lists the children (not the folder itself) with sizes and etags', async () => {
    await fake.writeFile('d/one.txt', '1');
    await fake.mkdir('d/sub');
    const list = (await client.getDirectoryContents('/d')) as {
      basename: string;
      type: string;
      size: number;
      etag: string | null;
    }[];
    expect(list.map((e) => [e.basename, e.type]).sort()).toEqual([
      ['one.txt', 'file'],
      ['sub', 'directory'],
    ]);
    expect(list.find((e) => e.basename === 'one.txt')?.size).toBe(1);
    const stat = (await client.stat('/d/one.txt')) as { etag: string | null };
    expect(stat.etag).toMatch(/^[0-9a-f]+$/);
  });
});
