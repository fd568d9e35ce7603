/** PUT streams to disk (never buffered whole) and a broken upload never replaces the file. */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, dav } from './helpers.js';

let fake: FakeNextcloud;

beforeAll(async () => {
  fake = await startFakeNextcloud();
});
afterAll(async () => {
  await fake.close();
});

const MB = 1024 * 1024;

/** Deterministic pseudo-random bytes, produced as they are read. */
function generated(total: number): Readable {
  let sent = 0;
  let seed = 1;
  return new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const size = Math.min(256 * 1024, total - sent);
      const chunk = Buffer.allocUnsafe(size);
      for (let i = 0; i < size; i += 4) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        chunk.writeUInt32LE(seed, i);
      }
      sent += size;
      this.push(chunk);
    },
  });
}

function upload(path: string, body: Readable, length: number): Promise<number> {
  const { hostname, port } = new URL(fake.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: hostname,
        port,
        method: 'PUT',
        path: `/remote.php/dav/files/${fake.user}/${path}`,
        headers: { Authorization: basic(fake.user, fake.password), 'Content-Length': length },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    body.pipe(req);
  });
}

describe('PUT streams to disk', () => {
  it('a 96 MB upload and download keep their sha256, with memory far below the file size', async () => {
    const size = 96 * MB;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 5);
    const before = process.memoryUsage().arrayBuffers;
    const sent = createHash('sha256');
    const source = generated(size);
    source.on('data', (c: Buffer) => sent.update(c));
    const status = await upload('big.bin', source, size);
    clearInterval(sampler);
    expect(status).toBe(201);
    expect(peak - before).toBeLessThan(48 * MB);
    const res = await dav(fake, 'GET', 'big.bin');
    const got = createHash('sha256');
    for await (const c of Readable.fromWeb(res.body as never)) got.update(c as Buffer);
    expect(got.digest('hex')).toBe(sent.digest('hex'));
  }, 60_000);

  it('an upload cut short leaves the old file in place', async () => {
    await fake.writeFile('keep.txt', 'old content');
    const { hostname, port } = new URL(fake.url);
    await new Promise<void>((resolve) => {
      const req = http.request({
        host: hostname,
        port,
        method: 'PUT',
        path: `/remote.php/dav/files/${fake.user}/keep.txt`,
        headers: { Authorization: basic(fake.user, fake.password), 'Content-Length': 1000 },
      });
      req.on('error', () => resolve());
      req.write('partial');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    await new Promise((r) => setTimeout(r, 50));
    expect((await fake.readFile('keep.txt'))?.toString()).toBe('old content');
  });
});

describe('Expect: 100-continue', () => {
  function putExpecting(
    path: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; continued: boolean }> {
    const { hostname, port } = new URL(fake.url);
    return new Promise((resolve, reject) => {
      let continued = false;
      const req = http.request({
        host: hostname,
        port,
        method: 'PUT',
        path: `/remote.php/dav/files/${fake.user}/${path}`,
        headers: {
          Authorization: basic(fake.user, fake.password),
          'Content-Length': 4,
          Expect: '100-continue',
          ...headers,
        },
      });
      req.on('continue', () => {
        continued = true;
        req.end('body');
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, continued });
        });
      });
      req.on('error', reject);
      req.flushHeaders();
    });
  }

  it('a PUT refused by a precondition is answered without asking for the body', async () => {
    await fake.writeFile('exp.txt', 'old');
    const refused = await putExpecting('exp.txt', { 'If-None-Match': '*' });
    expect(refused).toEqual({ status: 412, continued: false });
    expect((await fake.readFile('exp.txt'))?.toString()).toBe('old');
  });

  it('an accepted PUT gets 100 Continue, then its answer', async () => {
    const accepted = await putExpecting('exp-new.txt', {});
    expect(accepted).toEqual({ status: 201, continued: true });
    expect((await fake.readFile('exp-new.txt'))?.toString()).toBe('body');
  });
});
