/** Large test files, written and read as streams (never held in memory). */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const BLOCK = 1 << 20;

/**
 * Writes `bytes` of incompressible data: one random MiB, each copy stamped with its
 * block number so no two blocks are equal.
 */
export async function writeBigFile(path: string, bytes: number): Promise<void> {
  const block = randomBytes(BLOCK);
  let written = 0;
  const source = Readable.from(
    (function* () {
      while (written < bytes) {
        const n = Math.min(BLOCK, bytes - written);
        const chunk = Buffer.from(block.subarray(0, n));
        chunk.writeUInt32BE(written / BLOCK, 0);
        written += n;
        yield chunk;
      }
    })(),
  );
  await pipeline(source, createWriteStream(path));
}
