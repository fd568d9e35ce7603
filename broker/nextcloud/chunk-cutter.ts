/**
 * Cuts one stream into consecutive pieces of given lengths, each its own Readable (a
 * chunk PUT's body), without buffering more than the source's own reads. Each piece
 * hashes what it carries (sha256), to compare with Nextcloud's hash of the chunk.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

export interface Piece {
  readonly stream: Readable;
  /** The sha256 of the piece; call once its stream has ended. */
  sha256(): string;
}

export class ChunkCutter {
  readonly #source: AsyncIterator<Buffer>;
  #rest: Buffer | undefined;

  constructor(source: Readable) {
    this.#source = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  /** The next `length` bytes of the source; the stream fails if the source ends first. */
  piece(length: number): Piece {
    let left = length;
    const hash = createHash('sha256');
    const stream = new Readable({
      read: () => {
        if (left === 0) {
          stream.push(null);
          return;
        }
        this.#next(left).then(
          (chunk) => {
            left -= chunk.length;
            hash.update(chunk);
            stream.push(chunk);
            if (left === 0) stream.push(null);
          },
          (error: unknown) =>
            stream.destroy(error instanceof Error ? error : new Error('the body failed')),
        );
      },
    });
    return { stream, sha256: () => hash.digest('hex') };
  }

  /** Resolves once the source has ended with nothing left over; rejects otherwise. */
  async end(): Promise<void> {
    if (this.#rest !== undefined && this.#rest.length > 0) throw longer();
    for (;;) {
      const r = await this.#source.next();
      if (r.done === true) return;
      if (r.value.length > 0) throw longer();
    }
  }

  /** Up to `max` bytes (at least one), from what is left over or the source. */
  async #next(max: number): Promise<Buffer> {
    let chunk = this.#rest;
    this.#rest = undefined;
    while (chunk === undefined || chunk.length === 0) {
      const r = await this.#source.next();
      if (r.done === true)
        throw Object.assign(new Error('body shorter than its size'), { code: 'BODY_TOO_SHORT' });
      chunk = r.value;
    }
    if (chunk.length <= max) return chunk;
    this.#rest = chunk.subarray(max);
    return chunk.subarray(0, max);
  }
}

function longer(): Error {
  return Object.assign(new Error('body longer than its size'), { code: 'BODY_TOO_LONG' });
}
