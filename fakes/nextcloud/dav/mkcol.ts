/** MKCOL: 201 new, 405 existing (or a `*.part` name), 409 missing parent. */
import { parentRel } from '../paths.js';
import { EX } from '../reply.js';
import { readSmallBody } from './body.js';
import { checkPreconditions } from './conditions.js';
import type { DavContext } from './context.js';
import { created as noteCreated } from './file-events.js';
import { isPartName } from './write-checks.js';

export async function mkcol(ctx: DavContext): Promise<void> {
  const { rel } = ctx.target;
  const store = ctx.state.store;
  const body = await readSmallBody(ctx.req);
  if (body !== '') {
    ctx.reply.sabre(
      415,
      EX.unsupportedMediaType,
      'The request body for the MKCOL request must have an xml Content-Type',
    );
    return;
  }
  const node = await store.info(rel);
  if (!(await checkPreconditions(ctx, node))) return;
  if (node || isPartName(rel)) {
    ctx.reply.sabre(405, EX.methodNotAllowed, 'The resource you tried to create already exists');
    return;
  }
  const parent = await store.info(parentRel(rel));
  if (!parent || parent.kind !== 'folder') {
    ctx.reply.sabre(409, EX.conflict, 'Parent node does not exist');
    return;
  }
  await store.mkdir(rel);
  await noteCreated(ctx, rel);
  const created = await store.info(rel);
  ctx.reply.empty(201, created ? { 'OC-FileId': store.ocId(created.fileId) } : {});
}
