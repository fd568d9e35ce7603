/**
 * HashingStream with `passOn`/`keep` (a blob PUT that declares its sha256 after the
 * file): however the body is cut into reads, exactly the first `passOn` bytes are hashed
 * and passed on to Nextcloud, the `keep` bytes after them are kept aside, and a byte
 * more fails the stream.
 */
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HashingStream } from '../../broker/operations/hashing.js';

/** Runs `body`, cut at `cuts`, through the stream; what passed on, and the stream. */
async function run(body: Buffer, cuts: number[], passOn: number, keep: number) {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const reads: Buffer[] = [];
  let at = 0;
  for (const p of [...points, body.length]) {
    if (p > at) reads.push(body.subarray(at, p));
    at = Math.max(at, p);
  }
  const hasher = new HashingStream({ passOn, keep });
  const passed: Buffer[] = [];
  const sink = new Writable({
    write: (chunk: Buffer, _e, done) => {
      passed.push(chunk);
      done();
    },
  });
  const result = await pipeline(Readable.from(reads), hasher, sink).then(
    () => 'ended',
    (e: unknown) => (e as { code?: string }).code ?? 'failed',
  );
  return { result, passed: Buffer.concat(passed), hasher };
}

describe('HashingStream passing on part of a body', () => {
  it('passes on the first bytes, keeps the rest, whatever the reads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 600 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (bytes, cuts) => {
          const file = Buffer.from(bytes);
          const digits = Buffer.from(createHash('sha256').update(file).digest('hex'), 'latin1');
          const { result, passed, hasher } = await run(
            Buffer.concat([file, digits]),
            cuts,
            file.length,
            64,
          );
          expect(result).toBe('ended');
          expect(passed).toEqual(file);
          expect(hasher.after()).toEqual(digits);
          expect(hasher.bytes).toBe(file.length);
          expect(hasher.sha256()).toBe(digits.toString('latin1'));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('attack: a body longer than the file and its digits fails, passing on no byte of the excess', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (size, extra, cuts) => {
          const body = Buffer.alloc(size + 64 + extra, 7);
          const { result, passed } = await run(body, cuts, size, 64);
          expect(result).toBe('BODY_TOO_LONG');
          expect(passed.length).toBeLessThanOrEqual(size);
        },
      ),
      { numRuns: 200 },
    );
  });
});
