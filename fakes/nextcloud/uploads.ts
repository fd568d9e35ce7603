/**
 * The user's chunked-upload folders (`/remote.php/dav/uploads/<user>/<id>/`), kept on
 * disk next to the fake's files: each folder holds its chunks as files, named as sent.
 * Nothing here is visible in the user's files until a `MOVE` of `.file` assembles it.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ShortBodyError } from './store.js';
import { hashingPassThrough, type Hashes } from './dav/x-hash.js';

export interface UploadFolder {
  id: string;
  /** Unquoted; `.file` answers with it (it is what If-Match on a MOVE of `.file` sees). */
  etag: string;
}

export class UploadFolders {
  readonly #folders = new Map<string, UploadFolder>();

  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  get(id: string): UploadFolder | undefined {
    return this.#folders.get(id);
  }

  ids(): string[] {
    return [...this.#folders.keys()];
  }

  async create(id: string): Promise<void> {
    await fsp.mkdir(this.#dir(id), { recursive: true });
    this.#folders.set(id, { id, etag: randomBytes(16).toString('hex') });
  }

  async remove(id: string): Promise<void> {
    this.#folders.delete(id);
    await fsp.rm(this.#dir(id), { recursive: true, force: true });
  }

  /**
   * Stores one chunk, hashing it on the way (`X-Hash` answers from that, not from a
   * second read); returns whether a chunk of that name was replaced, and its hashes.
   */
  async putChunk(
    id: string,
    name: string,
    body: Readable,
    expected: number | undefined,
    requested: string | undefined,
  ): Promise<{ replaced: boolean; hashes: Hashes }> {
    const file = this.chunkPath(id, name);
    const existed = await fsp.stat(file).then(
      () => true,
      () => false,
    );
    const partial = `${file}.incoming`;
    const hashing = hashingPassThrough(requested);
    try {
      const out = createWriteStream(partial);
      await pipeline(body, hashing.stream, out);
      if (expected !== undefined && out.bytesWritten !== expected)
        throw new ShortBodyError(expected, out.bytesWritten);
      await fsp.rename(partial, file);
    } finally {
      await fsp.rm(partial, { force: true });
    }
    return { replaced: existed, hashes: hashing.digests() };
  }

  /** Chunk names in the order Nextcloud assembles them (natural order: `2` before `10`). */
  async chunks(id: string): Promise<{ name: string; size: number }[]> {
    const names = (await fsp.readdir(this.#dir(id))).filter((n) => !n.endsWith('.incoming'));
    names.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    const out: { name: string; size: number }[] = [];
    for (const name of names)
      out.push({ name, size: (await fsp.stat(path.join(this.#dir(id), name))).size });
    return out;
  }

  /** The assembled bytes, chunk after chunk. */
  assembled(id: string, names: readonly string[]): Readable {
    const dir = this.#dir(id);
    return Readable.from(
      (async function* () {
        for (const name of names)
          for await (const chunk of createReadStream(path.join(dir, name)) as AsyncIterable<Buffer>)
            yield chunk;
      })(),
    );
  }

  /** Where a chunk is kept (for hashing it). */
  chunkPath(id: string, name: string): string {
    return path.join(this.#dir(id), name);
  }

  #dir(id: string): string {
    return path.join(this.#root, Buffer.from(id, 'utf8').toString('hex'));
  }
}
