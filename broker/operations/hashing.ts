/**
 * A pass-through stream that hashes (sha256, and sha1 when asked: what an upload compares
 * with Nextcloud's hash, see VERIFY_HASH) and counts the bytes it carries.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, Writable, type TransformCallback, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { relayed } from '../base/relayed-memory.js';

export class HashingStream extends Transform {
  readonly #hash: Hash = createHash('sha256');
  readonly #sha1: Hash | undefined;
  readonly #passOn: number;
  readonly #keep: number;
  #bytes = 0;
  #after: Buffer[] = [];
  #afterBytes = 0;
  #digest: string | undefined;
  #sha1Digest: string | undefined;

  /**
   * `passOn`: hash and pass on only that many bytes, and keep the `keep` bytes that
   * follow them (`after()`) instead; any byte beyond those fails the stream.
   */
  constructor(options: { sha1?: boolean; passOn?: number; keep?: number } = {}) {
    super();
    this.#sha1 = options.sha1 === true ? createHash('sha1') : undefined;
    this.#passOn = options.passOn ?? Number.POSITIVE_INFINITY;
    this.#keep = options.keep ?? 0;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const room = this.#passOn - this.#bytes;
    if (chunk.length > room) {
      const rest = chunk.subarray(Math.max(0, room));
      if (this.#afterBytes + rest.length > this.#keep) {
        done(
          Object.assign(new Error('the body is longer than its size'), { code: 'BODY_TOO_LONG' }),
        );
        return;
      }
      this.#after.push(Buffer.from(rest));
      this.#afterBytes += rest.length;
      if (room <= 0) {
        done();
        return;
      }
      chunk = chunk.subarray(0, room);
    }
    this.#hash.update(chunk);
    this.#sha1?.update(chunk);
    this.#bytes += chunk.length;
    relayed(chunk.length);
    done(null, chunk);
  }

  /** The bytes kept after the first `passOn` (see the constructor). */
  after(): Buffer {
    return Buffer.concat(this.#after);
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The hex sha256 of everything that passed; call once the stream has ended. */
  sha256(): string {
    this.#digest ??= this.#hash.digest('hex');
    return this.#digest;
  }

  /** The hex sha1 of everything that passed (built with `sha1: true`); once it ended. */
  sha1(): string {
    if (this.#sha1 === undefined) throw new Error('this stream does not hash sha1');
    this.#sha1Digest ??= this.#sha1.digest('hex');
    return this.#sha1Digest;
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

/**
 * Streams `source` into `sink` (which is left open), hashing and counting every byte on
 * the way; resolves with their sha256 and count once the source has ended. The lean path
 * for large bodies: one `data` handler instead of a Transform between two pipes, which
 * per 64 KiB chunk cost a pause/resume and a buffer hop, and twice the CPU of this loop.
 * Fails when either side does, when the sink closes first (the client went away), or
 * when `signal` aborts (with its reason); the source is destroyed on every failure.
 */
export function relayHashing(
  source: Readable,
  sink: Writable,
  signal?: AbortSignal,
): Promise<{ sha256: string; size: number }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let size = 0;
    const onData = (chunk: Buffer): void => {
      hash.update(chunk);
      size += chunk.length;
      relayed(chunk.length);
      if (!sink.write(chunk)) source.pause();
    };
    const onDrain = (): void => {
      source.resume();
    };
    const cleanup = (): void => {
      for (const [emitter, event, listener] of listeners) emitter.off(event, listener);
      signal?.removeEventListener('abort', onAbort);
    };
    const fail = (error: unknown): void => {
      cleanup();
      source.destroy();
      reject(error instanceof Error ? error : new Error('the stream failed'));
    };
    const onEnd = (): void => {
      cleanup();
      resolve({ sha256: hash.digest('hex'), size });
    };
    const onSinkClose = (): void => {
      fail(
        Object.assign(new Error('the receiving side closed'), {
          code: 'ERR_STREAM_PREMATURE_CLOSE',
        }),
      );
    };
    const onAbort = (): void => {
      fail(signal?.reason);
    };
    const listeners: [Readable | Writable, string, Parameters<Readable['on']>[1]][] = [
      [source, 'data', onData],
      [source, 'end', onEnd],
      [source, 'error', fail],
      [sink, 'drain', onDrain],
      [sink, 'error', fail],
      [sink, 'close', onSinkClose],
    ];
    if (signal?.aborted === true) {
      onAbort();
      return;
    }
    // A sink closed before the relay began has no 'close' left to emit.
    if (sink.destroyed) {
      onSinkClose();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    for (const [emitter, event, listener] of listeners) emitter.on(event, listener);
    source.resume();
  });
}
