/**
 * files_trashbin: deleted items live in a private folder as `<name>.d<unix seconds>`
 * and remember where they came from, so they can be listed and restored.
 *
 * On disk (like the freedesktop trash): `files/<id>` is the item, `info/<id>.json` says
 * where it was, when it was deleted and what it is. `load()` reads both back, so a fake
 * whose trash folder is kept (the demo's) still lists and restores after a restart; an
 * item whose file or info is gone (restored by hand) is not listed.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { baseName, parentRel } from './paths.js';
import { moveOnDisk, type DiskStore } from './store.js';

export interface TrashItem {
  /** Name in the trashbin: `<name>.d<deletedAt>`. */
  id: string;
  /** Where it was: stored rel (NFC, no leading slash). */
  original: string;
  /** Unix seconds. */
  deletedAt: number;
  kind: 'file' | 'folder';
  ids: Map<string, number>;
}

const Info = z.object({
  original: z.string().min(1),
  deletedAt: z.number().int().nonnegative(),
  kind: z.enum(['file', 'folder']),
});

export class TrashBin {
  readonly #items = new Map<string, TrashItem>();
  /** Entries being written: the lock `move2trash` takes on the trash path. */
  readonly #inProgress = new Set<string>();

  readonly #store: DiskStore;
  readonly #now: () => number;

  constructor(
    readonly dir: string,
    store: DiskStore,
    now: () => number,
  ) {
    this.#store = store;
    this.#now = now;
  }

  /** Creates the folders and reads back what an earlier run left in them. */
  async load(): Promise<void> {
    await fsp.mkdir(path.join(this.dir, 'files'), { recursive: true });
    await fsp.mkdir(path.join(this.dir, 'info'), { recursive: true });
    for (const name of await fsp.readdir(path.join(this.dir, 'info'))) {
      if (!name.endsWith('.json')) continue;
      const id = name.slice(0, -'.json'.length);
      const info = Info.safeParse(
        JSON.parse(await fsp.readFile(this.#infoFile(id), 'utf8').catch(() => 'null')),
      );
      const present = await fsp.stat(this.abs(id)).then(
        () => true,
        () => false,
      );
      if (info.success && present) this.#items.set(id, { id, ...info.data, ids: new Map() });
    }
  }

  #infoFile(id: string): string {
    return path.join(this.dir, 'info', `${id}.json`);
  }

  list(): TrashItem[] {
    return [...this.#items.values()];
  }

  get(id: string): TrashItem | undefined {
    return this.#items.get(id);
  }

  abs(id: string, inner: string[] = []): string {
    return path.join(this.dir, 'files', id, ...inner);
  }

  /**
   * Move rel from the user's files into the trashbin, as files_trashbin's
   * `Trashbin::move2trash` does (observed on 34 and 29): the entry is `NAME.d<seconds>`,
   * whichever folder the item was in. A delete of the same NAME that overlaps one in
   * progress moves the time on by a second; one that comes after it in the same second
   * unlinks that entry first: **the earlier item is gone for good** (only the later one is
   * listed and kept).
   */
  async put(rel: string, kind: 'file' | 'folder'): Promise<TrashItem> {
    let deletedAt = Math.floor(this.#now() / 1000);
    const name = baseName(rel);
    while (this.#inProgress.has(`${name}.d${deletedAt}`)) deletedAt += 1;
    const id = `${name}.d${deletedAt}`;
    this.#inProgress.add(id);
    try {
      if (this.#items.has(id)) await this.purge(id);
      await moveOnDisk(this.#store.abs(rel), this.abs(id));
      const item: TrashItem = { id, original: rel, deletedAt, kind, ids: this.#store.detach(rel) };
      this.#items.set(id, item);
      await fsp.writeFile(this.#infoFile(id), JSON.stringify({ original: rel, deletedAt, kind }));
      return item;
    } finally {
      this.#inProgress.delete(id);
    }
  }

  /** Restore to the original place, or the root if its folder is gone; never overwrites. */
  async restore(id: string): Promise<string> {
    const item = this.#items.get(id);
    if (!item) throw new Error(`no trash item ${id}`);
    let folder = parentRel(item.original);
    const parent = await this.#store.info(folder);
    if (!parent || parent.kind !== 'folder') folder = '';
    const name = baseName(item.original);
    const dot = item.kind === 'file' ? name.lastIndexOf('.') : -1;
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    let target = folder === '' ? name : `${folder}/${name}`;
    for (let n = 1; await this.#store.info(target); n++) {
      const candidate = `${stem} (restored${n > 1 ? ` ${n}` : ''})${ext}`;
      target = folder === '' ? candidate : `${folder}/${candidate}`;
    }
    await moveOnDisk(this.abs(id), this.#store.abs(target));
    this.#items.delete(id);
    await fsp.rm(this.#infoFile(id), { force: true });
    this.#store.attach(target, item.ids);
    return target;
  }

  /** Bytes an item holds (a folder: all its files), as Nextcloud's `oc:size` says. */
  async size(id: string, inner: string[] = []): Promise<number> {
    const abs = this.abs(id, inner);
    const st = await fsp.stat(abs);
    if (!st.isDirectory()) return st.size;
    let total = 0;
    for (const name of await fsp.readdir(abs)) total += await this.size(id, [...inner, name]);
    return total;
  }

  /**
   * Nextcloud's space-driven expiry with the default `trashbin_retention_obligation`
   * `auto` (files_trashbin `Trashbin::expire`, run by the background job): with a
   * quota, while the trash bin holds half the free space (`quota - used`) or more, or
   * anything once that is gone, the oldest items are deleted. Answers what it deleted.
   */
  async expireForSpace(quota: number | null, used: number): Promise<string[]> {
    if (quota === null) return [];
    const free = quota - used;
    const items = [...this.#items.values()].sort((a, b) => a.deletedAt - b.deletedAt);
    let trash = 0;
    for (const item of items) trash += await this.size(item.id);
    let available = free > 0 ? free / 2 - trash : free - trash;
    const gone: string[] = [];
    for (const item of items) {
      if (available > 0) break;
      const bytes = await this.size(item.id);
      await this.purge(item.id);
      available += bytes;
      gone.push(item.original);
    }
    return gone;
  }

  async purge(id: string): Promise<void> {
    await fsp.rm(this.abs(id), { recursive: true, force: true });
    await fsp.rm(this.#infoFile(id), { force: true });
    this.#items.delete(id);
  }

  async purgeAll(): Promise<void> {
    for (const id of [...this.#items.keys()]) await this.purge(id);
  }
}
