/**
 * The fake's quota (`faults.quotaBytes`, fakes/nextcloud/dav/quota.ts) answers as
 * Nextcloud 34 does (docs/nextcloud-behaviour.md, "Quota and locks during an upload"): 507 InsufficientStorage on a
 * file PUT that does not fit (before the body with `Expect: 100-continue`), on a chunk
 * only when it carries `OC-Total-Length` above the free space, and on the final MOVE.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, dav, davUrl, sabreException } from './helpers.js';

let fake: FakeNextcloud;

beforeAll(async () => {
  fake = await startFakeNextcloud();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(async () => {
  fake.reset();
  await fake.mkdir('Sub');
  fake.faults.quotaBytes = 1000;
});

const uploads = (path = ''): string => `${fake.url}/remote.php/dav/uploads/${fake.user}/${path}`;
const auth = (): Record<string, string> => ({ Authorization: basic(fake.user, fake.password) });

/** A PUT with `Expect: 100-continue`: the status, and whether the server asked for the body. */
function putExpecting(path: string, length: number): Promise<{ status: number; asked: boolean }> {
  return new Promise((resolve, reject) => {
    let asked = false;
    const req = request(davUrl(fake, path), {
      method: 'PUT',
      headers: {
        ...auth(),
        'Content-Length': String(length),
        'If-None-Match': '*',
        Expect: '100-continue',
      },
    });
    req.on('continue', () => {
      asked = true;
      req.end(Buffer.alloc(length));
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, asked });
      req.destroy();
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

async function mkcol(id: string): Promise<void> {
  const res = await fetch(uploads(id), {
    method: 'MKCOL',
    headers: { ...auth(), Destination: davUrl(fake, 'Sub/big.bin') },
  });
  expect(res.status).toBe(201);
}

function chunk(id: string, n: number, bytes: number, total?: number): Promise<Response> {
  return fetch(uploads(`${id}/${n}`), {
    method: 'PUT',
    headers: {
      ...auth(),
      Destination: davUrl(fake, 'Sub/big.bin'),
      ...(total === undefined ? {} : { 'OC-Total-Length': String(total) }),
    },
    body: Buffer.alloc(bytes, 1),
  });
}

describe('quota: a file PUT that does not fit', () => {
  it('507 naming the file, after the body when no 100-continue was asked for', async () => {
    const res = await dav(fake, 'PUT', 'Sub/direct.bin', { body: Buffer.alloc(1500) });
    expect(res.status).toBe(507);
    const text = await res.text();
    expect(sabreException(text)).toBe('Sabre\\DAV\\Exception\\InsufficientStorage');
    expect(text).toContain('Insufficient space in /Sub/direct.bin');
    expect(await fake.exists('Sub/direct.bin')).toBe(false);
  });

  it('with Expect: 100-continue, 507 before the body is asked for', async () => {
    expect(await putExpecting('Sub/early.bin', 1500)).toEqual({ status: 507, asked: false });
    expect(await putExpecting('Sub/fits.bin', 500)).toEqual({ status: 201, asked: true });
  });
});

describe('quota: a chunked upload that does not fit', () => {
  it('a chunk with OC-Total-Length over the free space: 507 naming the destination folder', async () => {
    await mkcol('q1');
    const res = await chunk('q1', 1, 600, 1500);
    expect(res.status).toBe(507);
    expect(await res.text()).toContain('Insufficient space in /Sub<');
  });

  it('a chunk without OC-Total-Length is stored; the MOVE of too much is 507, the folder kept', async () => {
    await mkcol('q2');
    expect((await chunk('q2', 1, 1500)).status).toBe(201);
    const move = await fetch(uploads('q2/.file'), {
      method: 'MOVE',
      headers: { ...auth(), Destination: davUrl(fake, 'Sub/big.bin'), Overwrite: 'F' },
    });
    expect(move.status).toBe(507);
    expect(await fake.exists('Sub/big.bin')).toBe(false);
    expect(fake.uploadFolders()).toContain('q2');
  });

  it('within the quota, every step succeeds', async () => {
    fake.faults.quotaBytes = 1_000_000;
    await mkcol('q3');
    expect((await chunk('q3', 1, 600, 600)).status).toBe(201);
    const move = await fetch(uploads('q3/.file'), {
      method: 'MOVE',
      headers: { ...auth(), Destination: davUrl(fake, 'Sub/big.bin'), Overwrite: 'F' },
    });
    expect(move.status).toBe(201);
  });
});
