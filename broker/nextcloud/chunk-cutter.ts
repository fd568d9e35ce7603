/**
 * Cuts one stream into consecutive pieces of given lengths, each its own Readable (a
 * chunk PUT's body), without buffering more than the source's own reads.
 */
import { Readable } from 'node:stream';

export interface Piece {
  readonly stream: Readable;
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
    const stream = new Readable({
      read: () => {
        if (left === 0) {
          stream.push(null);
          return;
        }
        this.#next(left).then(
          (chunk) => {
            left -= chunk.length;
            stream.push(chunk);
            if (left === 0) stream.push(null);
          },
          (error: unknown) =>
            stream.destroy(error instanceof Error ? error : new Error('the body failed')),
        );
      },
    });
    return { stream };
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
