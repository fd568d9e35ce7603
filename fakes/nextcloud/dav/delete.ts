/**
 * DELETE: 204, then 404. With files_trashbin on the item goes to the trashbin
 * (restorable); with it off it is really deleted.
 */
import { EX } from '../reply.js';
import { checkPreconditions, mayWrite } from './conditions.js';
import { notFound, type DavContext } from './context.js';

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
  if (ctx.state.faults.trashbin) await ctx.state.trash.put(rel, kind);
  else await ctx.state.store.remove(rel);
}
