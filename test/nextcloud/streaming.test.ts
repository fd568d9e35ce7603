/**
 * A 256 MiB file up to and back from the fake Nextcloud with bounded memory: the
 * client must stream both ways, never buffer a whole file.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './helpers.js';

const SIZE = 256 * 1024 * 1024;
const CHUNK = 1024 * 1024;
/** Generous: a buffered 256 MiB file would blow well past it. */
const MAX_GROWTH = 100 * 1024 * 1024;

/** Deterministic data, generated chunk by chunk (never the whole file in memory). */
function generated(hash: ReturnType<typeof createHash>): Readable {
  let sent = 0;
  const block = Buffer.alloc(CHUNK);
  return new Readable({
    highWaterMark: CHUNK,
    read() {
      if (sent >= SIZE) {
        this.push(null);
        return;
      }
      const chunk = Buffer.from(block);
      chunk.writeUInt32BE(sent / CHUNK, 0);
      chunk.writeUInt32BE(0xdeadbeef, CHUNK - 4);
      hash.update(chunk);
      sent += CHUNK;
      this.push(chunk);
    },
  });
}

function watchMemory(): { stop(): number } {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak - base;
    },
  };
}

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
  await rig.fake.mkdir('Big');
});
afterAll(async () => {
  await rig.close();
});

describe('streaming a 256 MiB file with bounded memory', () => {
  it('uploads and downloads it intact, RSS growth under 100 MB each way', async () => {
    const upHash = createHash('sha256');
    const up = watchMemory();
    const { etag } = await rig.client.upload(
      'Big/huge.bin',
      generated(upHash),
      { ifNoneMatch: '*' },
      SIZE,
    );
    const upGrowth = up.stop();
    expect(etag).toMatch(/^"/);
    expect(upGrowth).toBeLessThan(MAX_GROWTH);

    const down = watchMemory();
    const { stream, size } = await rig.client.readStream('Big/huge.bin');
    expect(size).toBe(SIZE);
    const downHash = createHash('sha256');
    let received = 0;
    for await (const chunk of stream) {
      downHash.update(chunk as Buffer);
      received += (chunk as Buffer).length;
    }
    const downGrowth = down.stop();
    expect(received).toBe(SIZE);
    expect(downHash.digest('hex')).toBe(upHash.digest('hex'));
    expect(downGrowth).toBeLessThan(MAX_GROWTH);
  }, 60_000);
});
