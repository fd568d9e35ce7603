/**
 * files_versions as Nextcloud 34.0.1 and 29.0.5 keep it (docs/nextcloud-behaviour.md
 * "Versions"): per file id, a table of entries named by the mtime in seconds of the
 * content they stand for (the current content's entry included), and the saved contents
 * of the replaced ones, one file each (`<fileid>.v<seconds>`).
 *
 * - An overwrite first saves the content it replaces under that content's mtime (an
 *   older save of the same name is replaced); an empty content is not saved, and its
 *   entry goes (observed: no version of an empty file is listed or restorable). If the new mtime differs, the new content
 *   gets an entry (an existing entry of that name is kept as it is); if it is the same,
 *   that entry now stands for the new content: nothing of the replaced one is listed.
 * - A restore saves the current content under its mtime unless a saved content of that
 *   name exists (then the current content is lost, as on the real server), puts the
 *   version's content in place with the version's mtime, and the version's own save is
 *   gone (its entry now stands for the current content; the first read of it fails
 *   with a 500 `TypeError`, later ones answer 404 as any current entry's).
 * - Versions are keyed by file id, so they follow moves, and a trashed file's versions
 *   come back with it; while no file has the id (trashed, deleted) none are listed.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { moveOnDisk } from './store.js';

export interface VersionEntry {
  /** The name: the mtime in whole seconds of the content it stands for. */
  readonly seconds: number;
  readonly size: number;
}

/** The file's content as a write or restore sees it. */
export interface CurrentContent {
  readonly fileId: number;
  /** Where its bytes are on disk. */
  readonly abs: string;
  readonly mtimeSeconds: number;
  readonly size: number;
}

export class VersionStore {
  /** file id → entry name (seconds) → size. */
  readonly #entries = new Map<number, Map<number, number>>();
  /** `<fileid>.v<seconds>` of the entries whose saved content a restore took. */
  readonly #taken = new Set<string>();

  constructor(readonly dir: string) {}

  async load(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
  }

  #saved(fileId: number, seconds: number): string {
    return path.join(this.dir, `${fileId}.v${seconds}`);
  }

  #table(fileId: number): Map<number, number> {
    let table = this.#entries.get(fileId);
    if (table === undefined) {
      table = new Map();
      this.#entries.set(fileId, table);
    }
    return table;
  }

  /** A new file: its content has an entry (nothing to save). */
  created(file: Omit<CurrentContent, 'abs'>): void {
    const table = this.#table(file.fileId);
    if (!table.has(file.mtimeSeconds)) table.set(file.mtimeSeconds, file.size);
  }

  /** Before an overwrite: the content about to be replaced is saved under its mtime. */
  async beforeOverwrite(current: CurrentContent): Promise<void> {
    if (current.size === 0) {
      if ((await this.savedContent(current.fileId, current.mtimeSeconds)) === undefined)
        this.#entries.get(current.fileId)?.delete(current.mtimeSeconds);
      return;
    }
    await fsp.copyFile(current.abs, this.#saved(current.fileId, current.mtimeSeconds));
    this.#taken.delete(`${current.fileId}.v${current.mtimeSeconds}`);
    const table = this.#table(current.fileId);
    if (!table.has(current.mtimeSeconds)) table.set(current.mtimeSeconds, current.size);
  }

  /** After an overwrite: the entry of the new content, as the doc comment above says. */
  afterOverwrite(previousSeconds: number, written: Omit<CurrentContent, 'abs'>): void {
    const table = this.#table(written.fileId);
    if (written.mtimeSeconds === previousSeconds) table.set(previousSeconds, written.size);
    else if (!table.has(written.mtimeSeconds)) table.set(written.mtimeSeconds, written.size);
  }

  /** The entries of a file, oldest first. */
  list(fileId: number): VersionEntry[] {
    return [...(this.#entries.get(fileId) ?? new Map<number, number>())]
      .map(([seconds, size]) => ({ seconds, size }))
      .sort((a, b) => a.seconds - b.seconds);
  }

  has(fileId: number, seconds: number): boolean {
    return this.#entries.get(fileId)?.has(seconds) === true;
  }

  /** Where the saved content of an entry is, if it has one (the current content's has none). */
  async savedContent(fileId: number, seconds: number): Promise<string | undefined> {
    if (!this.has(fileId, seconds)) return undefined;
    const file = this.#saved(fileId, seconds);
    return fsp.stat(file).then(
      () => file,
      () => undefined,
    );
  }

  /**
   * Whether a restore took the saved content of this entry and nothing read it since
   * (observed: the first read then fails with a 500, later ones are 404); the read
   * that asks counts as that first one.
   */
  takeFirstReadAfterRestore(fileId: number, seconds: number): boolean {
    return this.#taken.delete(`${fileId}.v${seconds}`);
  }

  /** The size the listing shows for an entry, if it has one. */
  sizeOf(fileId: number, seconds: number): number | undefined {
    return this.#entries.get(fileId)?.get(seconds);
  }

  /**
   * Puts the saved content of entry `seconds` in place of `current` (whose file the
   * caller then gives the version's mtime). False when the entry has no saved content
   * (it stands for the current content): nothing changes.
   */
  async restore(current: CurrentContent, seconds: number): Promise<boolean> {
    const version = await this.savedContent(current.fileId, seconds);
    if (version === undefined) return false;
    const keep = this.#saved(current.fileId, current.mtimeSeconds);
    const kept = await fsp.stat(keep).then(
      () => true,
      () => false,
    );
    // Observed: a saved content of the current mtime's name is not replaced, so the
    // current content is lost (it was what the owner had; the real server does this).
    if (!kept) {
      await fsp.copyFile(current.abs, keep);
      this.#taken.delete(`${current.fileId}.v${current.mtimeSeconds}`);
    }
    const table = this.#table(current.fileId);
    if (!table.has(current.mtimeSeconds)) table.set(current.mtimeSeconds, current.size);
    await moveOnDisk(version, current.abs);
    this.#taken.add(`${current.fileId}.v${seconds}`);
    return true;
  }
}
