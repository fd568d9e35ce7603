/**
 * The user's quota, as Nextcloud 34 answers an upload that does not fit (observed with
 * `occ user:setting alice files quota "1 MB"`):
 *
 * - a file `PUT` whose length (`OC-Total-Length`, else `Content-Length`) is more than the
 *   free space: **507** `Sabre\DAV\Exception\InsufficientStorage`, "Insufficient space
 *   in /<path>". With `Expect: 100-continue` it comes before the body (no 100 is sent);
 *   without, only once the whole body was read, on a connection kept alive;
 * - a chunk `PUT` into an upload folder: the same 507 only when it carries
 *   `OC-Total-Length` above the free space ("Insufficient space in /<the destination's
 *   folder>"); a chunk without it is stored whatever its size;
 * - the final `MOVE` of `.file`: 507 when the assembled file does not fit; the upload
 *   folder stays.
 *
 * The free space is the quota less what the user's files take (the trash bin and upload
 * folders do not count here). Inside a folder another user shared, it is that user's
 * quota and files that count (shares.ts). Not modelled: where among the other checks of
 * a MOVE the quota comes (the fake checks it last), and the free space of an overwrite.
 *
 * A folder's `quota-used-bytes` and `quota-available-bytes` (observed on 34 and 29):
 * the folder's own size, and the free space of whoever owns it (the user's, or the
 * sharer's inside a received share), -3 without a quota. Nextcloud caches both for five
 * minutes per user and path (`storage_info`): after a quota was set, or bytes written, a
 * path read before answers as it did then; a path read for the first time answers as
 * things are.
 */
import { EX } from '../reply.js';
import { bodyNeverRequested } from '../continue.js';
import type { NodeInfo } from '../store.js';
import type { FakeState } from '../state.js';
import { header, type DavContext } from './context.js';

/** How long Nextcloud keeps a path's quota figures (its `storage_info` cache). */
export const QUOTA_CACHE_MS = 5 * 60_000;

interface Shown {
  readonly used: string;
  readonly available: string;
  readonly until: number;
}

const shownByState = new WeakMap<FakeState, Map<string, Shown>>();

/** The free space of whoever owns `rel` right now (null: no quota). */
async function freeAt(state: FakeState, rel: string): Promise<number | null> {
  const share = state.shares.containing(rel);
  if (share === undefined) {
    const quota = state.quota;
    return quota === null ? null : quota - (await state.shares.ownUsed());
  }
  const { quota } = state.shares.sharer(share.owner);
  return quota === null ? null : quota - (await state.shares.usedBy(share.owner));
}

/** A folder's `quota-used-bytes` and `quota-available-bytes`, as cached for five minutes. */
export async function quotaShown(state: FakeState, node: NodeInfo): Promise<Shown> {
  const shown = shownByState.get(state) ?? new Map<string, Shown>();
  shownByState.set(state, shown);
  const now = state.now();
  const kept = shown.get(node.rel);
  if (kept !== undefined && now < kept.until) return kept;
  const free = await freeAt(state, node.rel);
  const fresh: Shown = {
    used: String(await state.store.treeSize(node.rel)),
    available: free === null ? '-3' : String(Math.max(0, free)),
    until: now + QUOTA_CACHE_MS,
  };
  shown.set(node.rel, fresh);
  return fresh;
}

/**
 * Whether `length` more bytes do not fit: the user's quota (`faults.quotaBytes`) for
 * their own files, the sharer's inside a received share (`at`: where the bytes go).
 */
export async function overQuota(
  ctx: DavContext,
  length: number,
  at = ctx.target.rel,
): Promise<boolean> {
  if (!Number.isFinite(length)) return false;
  const share = ctx.state.shares.containing(at);
  if (share !== undefined) {
    const { quota } = ctx.state.shares.sharer(share.owner);
    return quota !== null && length > quota - (await ctx.state.shares.usedBy(share.owner));
  }
  const quota = ctx.state.faults.quotaBytes;
  if (quota === null) return false;
  return length > quota - (await ctx.state.shares.ownUsed());
}

/** The length a file PUT declares: OC-Total-Length, else Content-Length. */
export function declaredLength(ctx: DavContext): number {
  return Number(header(ctx, 'OC-Total-Length') ?? header(ctx, 'Content-Length') ?? NaN);
}

/** Answers 507 naming `where` ('' = the root): before the body when none was asked for. */
export async function insufficientStorage(ctx: DavContext, where: string): Promise<void> {
  if (!bodyNeverRequested(ctx.req)) {
    // Apache reads what the client sends before PHP's answer goes out.
    for await (const _chunk of ctx.req) void _chunk;
  }
  ctx.reply.sabre(507, EX.insufficientStorage, `Insufficient space in /${where}`);
}
