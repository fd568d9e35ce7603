/**
 * PUT: 201 new / 204 existing with ETag, OC-ETag and OC-FileId (and the stored file's
 * hashes when `X-Hash` asks); preconditions and locks first; a missing parent is 404
 * (not 409). The body streams to disk.
 */
import { Buffer } from 'node:buffer';
import { baseName, parentRel } from '../paths.js';
import { sendContinue } from '../continue.js';
import { EX } from '../reply.js';
import { ShortBodyError } from '../store.js';
import { checkPreconditions, mayWrite } from './conditions.js';
import { beforeOverwrite, written as noteWritten } from './file-events.js';
import { header, notFound, type DavContext } from './context.js';
import { declaredLength, insufficientStorage, overQuota } from './quota.js';
import { isPartName, refusePartName } from './write-checks.js';
import { hashHeaders } from './x-hash.js';

export async function put(ctx: DavContext): Promise<void> {
  const { rel } = ctx.target;
  const store = ctx.state.store;
  if (rel === '') {
    ctx.reply.sabre(409, EX.conflict, 'PUT is not allowed on non-files.');
    return;
  }
  if (isPartName(rel) && header(ctx, 'If-None-Match') !== undefined) {
    ctx.reply.sabre(
      412,
      EX.preconditionFailed,
      'An If-None-Match header was specified, but the ETag matched (or * was specified).',
    );
    return;
  }
  if (refusePartName(ctx.reply, ctx.state.series, rel)) return;
  const node = await store.info(rel);
  const tokens = await checkPreconditions(ctx, node);
  if (!tokens) return;
  if (node?.kind === 'folder') {
    ctx.reply.sabre(409, EX.conflict, 'PUT is not allowed on non-files.');
    return;
  }
  if (node && !mayWrite(ctx, node, tokens)) return;
  const parent = await store.info(parentRel(rel));
  if (!parent) return notFound(ctx, parentRel(rel));
  if (parent.kind !== 'folder') {
    ctx.reply.sabre(409, EX.conflict, 'Files can only be created as children of collections');
    return;
  }
  const limit = ctx.state.series.putNameLimitBytes;
  if (limit !== undefined && Buffer.byteLength(baseName(rel)) >= limit) {
    // The real server writes `<name>.ocTransferId<n>.part` first; past 255 bytes that fails.
    ctx.reply.sabre(500, EX.generic, 'Could not write file contents');
    return;
  }
  if (await overQuota(ctx, declaredLength(ctx))) return insufficientStorage(ctx, rel);
  const lengthHeader = header(ctx, 'Content-Length');
  const expected = lengthHeader === undefined ? undefined : Number(lengthHeader);
  sendContinue(ctx.req);
  await beforeOverwrite(ctx, node);
  try {
    await store.writeFrom(rel, ctx.req, expected);
  } catch (e) {
    if (e instanceof ShortBodyError) {
      ctx.reply.sabre(
        400,
        EX.badRequest,
        `Expected filesize of ${e.expected} bytes but read (from Nextcloud client) and wrote (to Nextcloud storage) ${e.received} bytes. Could either be a network problem on the sending side or a problem writing to the storage on the server side.`,
      );
      return;
    }
    if (ctx.req.destroyed || ctx.req.readableAborted) return;
    throw e;
  }
  const mtimeHeader = header(ctx, 'X-OC-MTime');
  const mtime = mtimeHeader === undefined ? NaN : Number(mtimeHeader);
  if (Number.isFinite(mtime) && mtime > 0) await store.setMtime(rel, mtime);
  await noteWritten(ctx, node, rel);
  const written = await store.info(rel);
  if (!written) throw new Error(`fake nextcloud: ${rel} vanished after PUT`);
  ctx.reply.empty(node ? 204 : 201, {
    ETag: `"${written.etag}"`,
    'OC-ETag': `"${written.etag}"`,
    'OC-FileId': store.ocId(written.fileId),
    ...(Number.isFinite(mtime) && mtime > 0 ? { 'X-OC-MTime': 'accepted' } : {}),
    ...(await hashHeaders(header(ctx, 'X-Hash'), store.abs(rel), ctx.state.faults.xHash)),
  });
}
