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
 * folders do not count here). Not modelled: where among the other checks of a MOVE the
 * quota comes (the fake checks it last), and the free space of an overwrite.
 */
import { EX } from '../reply.js';
import { bodyNeverRequested } from '../continue.js';
import { header, type DavContext } from './context.js';

/** Whether `length` more bytes do not fit in the user's quota (`faults.quotaBytes`). */
export async function overQuota(ctx: DavContext, length: number): Promise<boolean> {
  const quota = ctx.state.faults.quotaBytes;
  if (quota === null || !Number.isFinite(length)) return false;
  return length > quota - (await ctx.state.store.treeSize(''));
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
