import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { relayHashing } from '../../broker/operations/hashing.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** A sink that takes one chunk at a time and remembers the most it ever held unflushed. */
function slowSink(): Writable & { got: Buffer[]; mostBuffered: number } {
  const got: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, done) {
      got.push(chunk);
      setImmediate(done);
    },
  }) as Writable & { got: Buffer[]; mostBuffered: number };
  sink.got = got;
  sink.mostBuffered = 0;
  const write = sink.write.bind(sink);
  sink.write = ((chunk: Buffer) => {
    const more = write(chunk);
    sink.mostBuffered = Math.max(sink.mostBuffered, sink.writableLength);
    return more;
  }) as typeof sink.write;
  return sink;
}

describe('relayHashing: the download loop (source → hash → client)', () => {
  it('passes every byte in order and answers their sha256 and count, leaving the sink open', async () => {
    const chunks = Array.from({ length: 40 }, (_, i) => Buffer.alloc(700 + i, i));
    const all = Buffer.concat(chunks);
    const sink = slowSink();
    const sent = await relayHashing(Readable.from(chunks), sink);
    expect(sent).toEqual({ sha256: sha(all), size: all.length });
    expect(sink.writableEnded).toBe(false);
    sink.end();
    await once(sink, 'finish');
    expect(Buffer.concat(sink.got).equals(all)).toBe(true);
  });

  it('respects backpressure: a slow client never holds more than one chunk beyond its mark', async () => {
    const sink = slowSink();
    const chunks = Array.from({ length: 200 }, () => Buffer.alloc(4096, 7));
    await relayHashing(Readable.from(chunks), sink);
    expect(sink.mostBuffered).toBeLessThanOrEqual(1024 + 4096);
  });

  it('a client that goes away fails the relay and stops reading from Nextcloud', async () => {
    const source = new PassThrough();
    const sink = slowSink();
    const relay = relayHashing(source, sink);
    source.write(Buffer.alloc(10));
    sink.destroy();
    await expect(relay).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(source.destroyed).toBe(true);
  });

  it('a grant that ends mid-stream (the signal) fails it with the reason and cuts the source', async () => {
    const source = new PassThrough();
    const controller = new AbortController();
    const relay = relayHashing(source, slowSink(), controller.signal);
    source.write(Buffer.alloc(10));
    const reason = new Error('grant revoked');
    controller.abort(reason);
    await expect(relay).rejects.toBe(reason);
    expect(source.destroyed).toBe(true);
  });

  it('an already aborted signal sends nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('ended before'));
    const sink = slowSink();
    await expect(
      relayHashing(Readable.from([Buffer.alloc(5)]), sink, controller.signal),
    ).rejects.toThrow('ended before');
    expect(sink.got).toEqual([]);
  });

  it('a source that breaks off (Nextcloud dropped) fails it with that error', async () => {
    const source = new PassThrough();
    const relay = relayHashing(source, slowSink());
    source.write(Buffer.alloc(10));
    source.destroy(new Error('socket hang up'));
    await expect(relay).rejects.toThrow('socket hang up');
  });
});
