/** A pass-through stream that hashes (sha256) and counts the bytes it carries. */
import { createHash, type Hash } from 'node:crypto';
import { Transform, Writable, type TransformCallback, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export class HashingStream extends Transform {
  readonly #hash: Hash = createHash('sha256');
  #bytes = 0;
  #digest: string | undefined;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.#hash.update(chunk);
    this.#bytes += chunk.length;
    done(null, chunk);
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The hex sha256 of everything that passed; call once the stream has ended. */
  sha256(): string {
    this.#digest ??= this.#hash.digest('hex');
    return this.#digest;
  }
}

/** Reads a stream to its end, keeping only its sha256 and length (constant memory). */
export async function digestStream(
  source: Readable,
  signal?: AbortSignal,
): Promise<{ sha256: string; size: number }> {
  const hasher = new HashingStream();
  const sink = new Writable({ write: (_chunk, _enc, done) => done() });
  await pipeline(source, hasher, sink, signal === undefined ? {} : { signal });
  return { sha256: hasher.sha256(), size: hasher.bytes };
}
