/**
 * Folders and files another user shared with this user (received shares), as Nextcloud
 * 29 shows and treats them: the share's root is a mount (`nc:mount-type` `shared`,
 * `nc:is-mount-root` true), everything in it belongs to the sharer (`oc:owner-id`) and
 * carries `S` in `oc:permissions`. A DELETE of the root unshares it: nothing goes to the
 * trash bin and it cannot be restored; a deleted folder takes the shares inside it along
 * the same way. A share root moves like any folder of one's own, but not into another
 * received share (403). Kept by file id, so a share follows its root when it moves.
 *
 * The sharer's space, as far as this user sees it: their quota (`occ user:setting
 * <sharer> files quota`, none by default) and the bytes their files take (what they
 * shared plus `elsewhere`, files of theirs this user cannot see). Nextcloud answers a
 * shared folder's `quota-available-bytes` with the sharer's free space, or -3 without a
 * quota (dav/quota.ts), and refuses an upload into it that does not fit with 507.
 *
 * Modelled read-write only. Not modelled: what the sharer sees, the sharer's own trash
 * bin, read-only shares, and a folder holding a share moved into another share (the
 * real server puts the inner share back at the user's root).
 */
import type { DiskStore } from './store.js';

export interface ReceivedShare {
  /** The sharer's user id. */
  readonly owner: string;
}

/** What this user's server knows of a sharer's space. */
export interface SharerSpace {
  /** Their quota in bytes; null: none. */
  quota: number | null;
  /** Bytes of theirs outside what they shared with this user. */
  elsewhere: number;
}

export class ReceivedShares {
  readonly #byFileId = new Map<number, ReceivedShare>();
  readonly #sharers = new Map<string, SharerSpace>();

  readonly #store: DiskStore;

  constructor(store: DiskStore) {
    this.#store = store;
  }

  add(fileId: number, share: ReceivedShare): void {
    this.#byFileId.set(fileId, share);
  }

  /** A sharer's quota (null: none) and the bytes of theirs this user cannot see. */
  setSharer(owner: string, space: Partial<SharerSpace>): void {
    this.#sharers.set(owner, { ...this.sharer(owner), ...space });
  }

  sharer(owner: string): SharerSpace {
    return this.#sharers.get(owner) ?? { quota: null, elsewhere: 0 };
  }

  /** The bytes the sharer's files take: what they shared with this user, and the rest. */
  async usedBy(owner: string): Promise<number> {
    let used = this.sharer(owner).elsewhere;
    for (const [id, share] of this.#byFileId) {
      const at = this.#store.relOfId(id);
      if (share.owner === owner && at !== undefined) used += await this.#store.treeSize(at);
    }
    return used;
  }

  /** The bytes this user's own files take: everything but what others shared (as `cloud/user` counts). */
  async ownUsed(): Promise<number> {
    let shared = 0;
    for (const id of this.#byFileId.keys()) {
      const at = this.#store.relOfId(id);
      if (at !== undefined) shared += await this.#store.treeSize(at);
    }
    return (await this.#store.treeSize('')) - shared;
  }

  /** The share whose root is exactly this file id. */
  rootOf(fileId: number): ReceivedShare | undefined {
    return this.#byFileId.get(fileId);
  }

  /** The share `rel` lies in (its root or anything below), if any. */
  containing(rel: string): ReceivedShare | undefined {
    const parts = rel === '' ? [] : rel.split('/');
    for (let n = parts.length; n > 0; n--) {
      const id = this.#store.knownId(parts.slice(0, n).join('/'));
      const share = id === undefined ? undefined : this.#byFileId.get(id);
      if (share !== undefined) return share;
    }
    return undefined;
  }

  /** The roots (stored rels) of the shares at or below `rel`. */
  rootsUnder(rel: string): string[] {
    const roots: string[] = [];
    for (const id of this.#byFileId.keys()) {
      const at = this.#store.relOfId(id);
      if (at !== undefined && (at === rel || at.startsWith(`${rel}/`))) roots.push(at);
    }
    return roots;
  }

  /** Unshares the share rooted at `rel`: gone from this user's files, nowhere in the trash. */
  async unshare(rel: string): Promise<void> {
    const id = this.#store.knownId(rel);
    if (id !== undefined) this.#byFileId.delete(id);
    await this.#store.remove(rel);
  }

  clear(): void {
    this.#byFileId.clear();
    this.#sharers.clear();
  }
}
