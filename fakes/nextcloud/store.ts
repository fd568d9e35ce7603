/**
 * The user's files on disk plus what Nextcloud keeps in its database: file ids
 * (kept across moves, like Nextcloud) and etags (change on every write, and
 * propagate to the parent folders).
 *
 * Like Nextcloud's scanner, a WebDAV overwrite keeps the file's etag when the file's
 * modification time, in whole seconds, did not change: two writes within one second
 * share an etag, whatever their sizes (observed on Nextcloud 29 and 34). Helper writes
 * (`writeBuffer`) stand for a change made later by someone else and always change it.
 * A file whose mtime a client set (`X-OC-Mtime`, `setMtime`) has the etag local storage
 * computes from its mtime and size: the same mtime and size give the same etag again,
 * however much later and whatever the content (observed on 29 and 34), until the next
 * write or lock gives it a new one.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { baseName, parentRel } from './paths.js';

export interface NodeInfo {
  /** NFC, no leading slash; '' = the user's root. */
  rel: string;
  name: string;
  kind: 'file' | 'folder';
  size: number;
  mtimeMs: number;
  fileId: number;
  /** Unquoted. */
  etag: string;
}

/** Names the server never shows (Nextcloud's blacklisted files). */
export function isHiddenName(name: string): boolean {
  return name.toLowerCase() === '.htaccess';
}

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * Resolves just after the wall clock starts a new second, so that the next overwrite
 * gets a new etag (see above). For tests that need an overwrite to change the etag.
 */
export function nextSecond(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
}

export class ShortBodyError extends Error {
  constructor(
    readonly expected: number,
    readonly received: number,
  ) {
    super(`expected ${expected} bytes, received ${received}`);
  }
}

/** Move a file or folder, also across file systems (the staging folder may be on tmpfs). */
export async function moveOnDisk(from: string, to: string): Promise<void> {
  try {
    await fsp.rename(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    await fsp.rm(to, { recursive: true, force: true });
    await fsp.cp(from, to, { recursive: true, preserveTimestamps: true });
    await fsp.rm(from, { recursive: true, force: true });
  }
}

export class DiskStore {
  readonly #ids = new Map<string, number>();
  readonly #gens = new Map<string, number>();
  /** Files (by id) whose etag follows their mtime and size (see above). */
  readonly #mtimeSet = new Set<number>();
  /** The etag generations of items in the trash bin, by id: a restore brings them back. */
  readonly #detachedGens = new Map<number, number>();
  /** How often a file's bytes were replaced by another file on disk (its inode changed). */
  readonly #inodes = new Map<number, number>();
  #nextId = 100;
  #realRoot: string | undefined;

  readonly #stagingDir: string;
  readonly #idBase: bigint;

  constructor(
    readonly root: string,
    stagingDir: string,
    readonly instanceId: string,
    idBase = 0n,
  ) {
    this.#stagingDir = stagingDir;
    this.#idBase = idBase;
  }

  abs(rel: string): string {
    return rel === '' ? this.root : path.join(this.root, ...rel.split('/'));
  }

  fileId(rel: string): number {
    let id = this.#ids.get(rel);
    if (id === undefined) {
      id = this.#nextId++;
      this.#ids.set(rel, id);
    }
    return id;
  }

  /** A file id no path has (a copy Nextcloud keeps elsewhere). */
  newId(): number {
    return this.#nextId++;
  }

  /** The id of rel if one was handed out (never assigns one). */
  knownId(rel: string): number | undefined {
    return this.#ids.get(rel);
  }

  relOfId(fileId: number): string | undefined {
    for (const [rel, id] of this.#ids) if (id === fileId) return rel;
    return undefined;
  }

  /** `OC-FileId` / `oc:id` form: 8-digit id + instance id. */
  /**
   * A file id as the server spells it: the store's own number plus `idBase`. From
   * Nextcloud 33 on ids are Snowflake ids past 2^53, so a base of 2^60 shows whether a
   * client keeps them as strings.
   */
  idText(fileId: number): string {
    return (this.#idBase + BigInt(fileId)).toString();
  }

  /** The store's number for an id as the server spells it, if it is one of ours. */
  fileIdOf(text: string): number | undefined {
    if (!/^\d{1,24}$/.test(text)) return undefined;
    const n = BigInt(text) - this.#idBase;
    return n >= 0n && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : undefined;
  }

  ocId(fileId: number): string {
    return this.idText(fileId).padStart(8, '0') + this.instanceId;
  }

  /**
   * Security: a request must stay inside root. Names are single components without
   * `..` (checked in paths.ts); here no folder on the way may be a symlink leading out.
   */
  async #insideRoot(rel: string): Promise<boolean> {
    this.#realRoot ??= await fsp.realpath(this.root);
    const parent = parentRel(rel);
    const expected =
      parent === '' ? this.#realRoot : path.join(this.#realRoot, ...parent.split('/'));
    try {
      return (await fsp.realpath(this.abs(parent))) === expected;
    } catch (e) {
      if (isMissing(e)) return false;
      throw e;
    }
  }

  async info(rel: string): Promise<NodeInfo | undefined> {
    if (rel !== '' && rel.split('/').some(isHiddenName)) return undefined;
    if (rel !== '' && !(await this.#insideRoot(rel))) return undefined;
    let st;
    try {
      st = await fsp.lstat(this.abs(rel));
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    // Security: symlinks and devices are not part of the user's files (never followed).
    if (!st.isFile() && !st.isDirectory()) return undefined;
    const fileId = this.fileId(rel);
    const gen = this.#gens.get(rel) ?? 0;
    // Whole seconds: Nextcloud reuses the etag while the storage mtime is unchanged.
    const basis =
      st.isFile() && this.#mtimeSet.has(fileId)
        ? `${fileId}:${this.#inodes.get(fileId) ?? 0}:mtime:${Math.floor(st.mtimeMs / 1000)}:${st.size}`
        : `${fileId}:${gen}:${Math.floor(st.mtimeMs / 1000)}`;
    const etag = createHash('md5').update(basis).digest('hex').slice(0, 13);
    return {
      rel,
      name: baseName(rel),
      kind: st.isDirectory() ? 'folder' : 'file',
      size: st.isDirectory() ? 0 : st.size,
      mtimeMs: st.mtimeMs,
      fileId,
      etag,
    };
  }

  async children(rel: string): Promise<NodeInfo[]> {
    const names = await fsp.readdir(this.abs(rel));
    const out: NodeInfo[] = [];
    for (const name of names.sort()) {
      if (isHiddenName(name)) continue;
      const info = await this.info(rel === '' ? name : `${rel}/${name}`);
      if (info) out.push(info);
    }
    return out;
  }

  /** Recursive size of a folder (oc:size, quota-used-bytes). */
  async treeSize(rel: string): Promise<number> {
    let total = 0;
    for (const c of await this.children(rel)) {
      total += c.kind === 'folder' ? await this.treeSize(c.rel) : c.size;
    }
    return total;
  }

  /** A write happened at rel: new etag for it and every folder above (etag propagation). */
  touch(rel: string): void {
    const id = this.#ids.get(rel);
    if (id !== undefined) this.#mtimeSet.delete(id);
    let r: string | undefined = rel;
    while (r !== undefined) {
      this.#gens.set(r, (this.#gens.get(r) ?? 0) + 1);
      r = r === '' ? undefined : parentRel(r);
    }
  }

  /**
   * Stream a body into rel through a staging file, so a broken upload never replaces
   * the file. Never buffers the body.
   */
  async writeFrom(rel: string, body: Readable, expectedLength: number | undefined): Promise<void> {
    const before = await this.info(rel);
    const staging = path.join(this.#stagingDir, `upload-${randomUUID()}`);
    try {
      const out = createWriteStream(staging);
      await pipeline(body, out);
      if (expectedLength !== undefined && out.bytesWritten !== expectedLength) {
        throw new ShortBodyError(expectedLength, out.bytesWritten);
      }
      await moveOnDisk(staging, this.abs(rel));
    } finally {
      await fsp.rm(staging, { force: true });
    }
    this.fileId(rel);
    const after = await this.info(rel);
    const sameSecond =
      before?.kind === 'file' &&
      after !== undefined &&
      Math.floor(before.mtimeMs / 1000) === Math.floor(after.mtimeMs / 1000);
    // The folders above always get a new etag; the file keeps its own within one second.
    if (sameSecond) this.touch(parentRel(rel));
    else this.touch(rel);
  }

  async writeBuffer(rel: string, content: Buffer): Promise<void> {
    await fsp.mkdir(path.dirname(this.abs(rel)), { recursive: true });
    await fsp.writeFile(this.abs(rel), content);
    this.fileId(rel);
    this.touch(rel);
  }

  async mkdir(rel: string, recursive = false): Promise<void> {
    await fsp.mkdir(this.abs(rel), { recursive });
    this.fileId(rel);
    this.touch(rel);
  }

  /**
   * A client set the mtime (`X-OC-Mtime`): the etag now follows mtime and size. With
   * `replaced`, the bytes came from another file on disk (a version restored), which
   * local storage's etag tells apart.
   */
  async setMtime(rel: string, seconds: number, opts: { replaced?: boolean } = {}): Promise<void> {
    await fsp.utimes(this.abs(rel), seconds, seconds);
    this.touch(rel);
    const id = this.fileId(rel);
    this.#mtimeSet.add(id);
    if (opts.replaced === true) this.#inodes.set(id, (this.#inodes.get(id) ?? 0) + 1);
  }

  /** Rename within the user's files; ids follow the items. */
  async move(from: string, to: string): Promise<void> {
    await moveOnDisk(this.abs(from), this.abs(to));
    this.#remap(from, to);
    this.touch(parentRel(from));
    this.touch(parentRel(to));
  }

  /** Forget the ids under rel; returns them relative to rel ('' = rel itself). */
  detach(rel: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, id] of [...this.#ids]) {
      if (k === rel || k.startsWith(rel + '/')) {
        out.set(k.slice(rel.length).replace(/^\//, ''), id);
        const gen = this.#gens.get(k);
        if (gen !== undefined) this.#detachedGens.set(id, gen);
        this.#ids.delete(k);
        this.#gens.delete(k);
      }
    }
    this.touch(parentRel(rel));
    return out;
  }

  /**
   * Give back ids detached earlier (trash restore), now rooted at rel. Observed: a
   * restored file has the etag it had before it was deleted; the folders above get new ones.
   */
  attach(rel: string, ids: Map<string, number>): void {
    for (const [suffix, id] of ids) {
      const at = suffix === '' ? rel : `${rel}/${suffix}`;
      this.#ids.set(at, id);
      const gen = this.#detachedGens.get(id);
      if (gen !== undefined) this.#gens.set(at, gen);
      this.#detachedGens.delete(id);
    }
    this.touch(parentRel(rel));
  }

  async remove(rel: string): Promise<void> {
    await fsp.rm(this.abs(rel), { recursive: true, force: true });
    this.detach(rel);
  }

  #remap(from: string, to: string): void {
    for (const [k, id] of [...this.#ids]) {
      if (k === from || k.startsWith(from + '/')) {
        const gen = this.#gens.get(k);
        this.#ids.delete(k);
        this.#gens.delete(k);
        this.#ids.set(to + k.slice(from.length), id);
        if (gen !== undefined) this.#gens.set(to + k.slice(from.length), gen);
      }
    }
  }
}
