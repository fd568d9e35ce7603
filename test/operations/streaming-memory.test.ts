/**
 * Constant memory: a 128 MiB file goes down and up through the broker (and is re-read
 * for verification) while the process grows by far less than the file. A broker that
 * buffered a whole file would grow by at least its size.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startBroker } from '../../support/daemon.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const MiB = 1024 * 1024;
const CHUNKS = 128;

function writeChunks(out: NodeJS.WritableStream, fill: number): Promise<void> {
  const chunk = Buffer.alloc(MiB, fill);
  let n = 0;
  return new Promise((resolve) => {
    const go = (): void => {
      while (n < CHUNKS) {
        n += 1;
        if (!out.write(chunk)) {
          out.once('drain', go);
          return;
        }
      }
      out.end(() => resolve());
    };
    go();
  });
}

it('streams 128 MiB down and up with bounded memory, sha256 matching', async () => {
  const broker = await startBroker();
  try {
    await broker.fake.mkdir('Mem');
    await writeChunks(createWriteStream(join(broker.fake.root, 'Mem', 'big.bin')), 7);
    await broker.grant([{ path: 'Mem', mode: 'write' }]);
    const transfer = await broker.transfer();
    const size = CHUNKS * MiB;
    const expected = createHash('sha256');
    for (let i = 0; i < CHUNKS; i += 1) expected.update(Buffer.alloc(MiB, 7));
    const expectedSha = expected.digest('hex');

    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    try {
      const read = await call(transfer, 'read', { instance: 'personal', path: 'Mem/big.bin' });
      const down = await new Promise<{ bytes: number; sha: string; trailer: string | undefined }>(
        (resolve, reject) => {
          const hash = createHash('sha256');
          let bytes = 0;
          request(
            new URL(read.blob_url as string, broker.url),
            { headers: { authorization: `Bearer ${TRANSFER_TOKEN}` } },
            (res) => {
              res.on('data', (c: Buffer) => {
                bytes += c.length;
                hash.update(c);
              });
              res.on('end', () =>
                resolve({
                  bytes,
                  sha: hash.digest('hex'),
                  trailer: res.trailers['x-broker-sha256'],
                }),
              );
              res.on('error', reject);
            },
          ).end();
        },
      );
      expect(down).toEqual({ bytes: size, sha: expectedSha, trailer: expectedSha });

      const write = await call(transfer, 'write', {
        instance: 'personal',
        path: 'Mem/up.bin',
        size,
        if_none_match: '*',
      });
      const up = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const req = request(
          new URL(write.blob_url as string, broker.url),
          {
            method: 'PUT',
            headers: { authorization: `Bearer ${TRANSFER_TOKEN}`, 'content-length': String(size) },
          },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve(JSON.parse(body) as Record<string, unknown>));
          },
        );
        req.on('error', reject);
        void writeChunks(req, 7);
      });
      expect(up).toMatchObject({ status: 'ok', size, sha256: expectedSha, verified: true });
    } finally {
      clearInterval(sampler);
    }
    // Fake Nextcloud, broker and client share this process; all of them stream.
    expect(peak - base).toBeLessThan(64 * MiB);
  } finally {
    await broker.close();
  }
});
