/**
 * Reading a local file through reused buffers (cli/client/transfer/file-bytes.ts): the hash is
 * the file's, and an upload writes exactly its bytes in order even when the sink holds
 * each buffer a while before taking it (a buffer is reused only after its write
 * callback), and fails when the file is not the size it was hashed at.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  digestFile,
  FileChangedError,
  READ_BYTES,
  sendFile,
} from '../../../cli/client/transfer/file-bytes.js';
import { tempStage } from '../../../support/processes.js';

/** A file of `size` random bytes. */
function randomFile(size: number): { file: string; bytes: Buffer } {
  const bytes = randomBytes(size);
  const file = join(tempStage('file-bytes'), 'f.bin');
  writeFileSync(file, bytes);
  return { file, bytes };
}

/** A sink that copies what it takes, each write acknowledged a few ticks later. */
function slowSink(): { sink: Writable; taken: () => Buffer; ended: Promise<void> } {
  const parts: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 2 * READ_BYTES,
    write(chunk: Buffer, _enc, done) {
      setImmediate(() => {
        parts.push(Buffer.from(chunk));
        done();
      });
    },
  });
  const ended = new Promise<void>((resolve) => sink.on('finish', resolve));
  return { sink, taken: () => Buffer.concat(parts), ended };
}

describe('digestFile', () => {
  it('answers the sha256 and size of the whole file, across several reads', async () => {
    const { file, bytes } = randomFile(3 * READ_BYTES + 17);
    expect(await digestFile(file)).toEqual({
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
    });
  });
});

describe('sendFile', () => {
  it('writes exactly the file, in order, however long the sink holds each buffer', async () => {
    const { file, bytes } = randomFile(9 * READ_BYTES + 5);
    const { sink, taken, ended } = slowSink();
    let counted = 0;
    await sendFile(file, sink, bytes.length, (n) => (counted += n));
    await ended;
    expect(taken().equals(bytes)).toBe(true);
    expect(counted).toBe(bytes.length);
  });

  it('sends an empty file as nothing, and ends the sink', async () => {
    const { file } = randomFile(0);
    const { sink, taken, ended } = slowSink();
    await sendFile(file, sink, 0, () => undefined);
    await ended;
    expect(taken().length).toBe(0);
  });

  it('fails when the file is longer or shorter than the size it was hashed at', async () => {
    const { file, bytes } = randomFile(READ_BYTES + 10);
    await expect(
      sendFile(file, slowSink().sink, bytes.length - 1, () => undefined),
    ).rejects.toBeInstanceOf(FileChangedError);
    await expect(
      sendFile(file, slowSink().sink, bytes.length + 1, () => undefined),
    ).rejects.toBeInstanceOf(FileChangedError);
  });

  it('fails when the sink fails', async () => {
    const { file, bytes } = randomFile(6 * READ_BYTES);
    const sink = new Writable({
      write(_chunk, _enc, done) {
        done(new Error('the connection closed'));
      },
    });
    await expect(sendFile(file, sink, bytes.length, () => undefined)).rejects.toThrow(
      /the connection closed/,
    );
  });
});
