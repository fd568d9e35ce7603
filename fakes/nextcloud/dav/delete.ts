/**
 * DELETE: 204, then 404. With files_trashbin on the item goes to the trashbin
 * (restorable); with it off it is really deleted. The root of a received share is
 * unshared instead (nothing in the trashbin), and so is every share inside a deleted
 * folder (see shares.ts).
 */
import { EX } from '../reply.js';
import { checkPreconditions, mayWrite } from './conditions.js';
import { notFound, type DavContext } from './context.js';
import { deleted } from './file-events.js';

export async function del(ctx: DavContext): Promise<void> {
  const { rel } = ctx.target;
  if (rel === '') {
    ctx.reply.sabre(403, EX.forbidden, 'Could not delete the home folder');
    return;
  }
  const node = await ctx.state.store.info(rel);
  if (!node) return notFound(ctx);
  const tokens = await checkPreconditions(ctx, node);
  if (!tokens || !mayWrite(ctx, node, tokens)) return;
  await discard(ctx, rel, node.kind, node.fileId);
  ctx.reply.empty(204);
}

/** Remove an item the way this server does: to the trashbin if enabled; its lock goes with it. */
export async function discard(
  ctx: DavContext,
  rel: string,
  kind: 'file' | 'folder',
  fileId: number,
): Promise<void> {
  ctx.state.locks.delete(fileId);
  // Observed: a received share is unshared, not trashed, also inside a deleted folder.
  for (const root of ctx.state.shares.rootsUnder(rel)) await ctx.state.shares.unshare(root);
  if (!(await ctx.state.store.info(rel))) return;
  const inShare = ctx.state.shares.containing(rel) !== undefined;
  if (ctx.state.faults.trashbin) {
    const item = await ctx.state.trash.put(rel, kind);
    // Observed: the item in the receiving user's trash bin is a copy with an id of its
    // own (the sharer's trash bin, not modelled, holds the file itself).
    if (inShare) item.ids.set('', ctx.state.store.newId());
  } else await ctx.state.store.remove(rel);
  deleted(ctx, rel, fileId);
}
