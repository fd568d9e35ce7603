/**
 * MOVE and COPY. Destination: absolute URL (or path) under this user's files.
 * Overwrite F onto an existing target: 412; T or absent: the old target goes to the
 * trashbin first. Missing target folder / own subtree: 409. A destination that
 * differs from the source only in Unicode normalisation exists (it is the source):
 * with `Overwrite: F` 412, otherwise the source is trashed and the answer is 404
 * (observed on Nextcloud 29).
 */
import fsp from 'node:fs/promises';
import { checkName, decodeSegment, parentRel, toUserPath, type UserPath } from '../paths.js';
import { EX } from '../reply.js';
import { checkPreconditions, mayWrite } from './conditions.js';
import { header, notFound, type DavContext } from './context.js';
import { discard } from './delete.js';
import { created, moved as noteMoved } from './file-events.js';
import { isPartName, refusePartName } from './write-checks.js';

const DAV_ROOT = '/remote.php/dav/';

/** Sabre's calculateUri for the Destination header, then Nextcloud's name rules. */
export function destination(ctx: DavContext): UserPath | undefined {
  const value = header(ctx, 'Destination');
  if (!value) {
    ctx.reply.sabre(400, EX.badRequest, 'The destination header was not supplied');
    return undefined;
  }
  let path = value.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').replace(/[?#].*$/s, '');
  path = path.replace(/\/{2,}/g, '/');
  if (!path.startsWith(DAV_ROOT)) {
    ctx.reply.sabre(403, EX.forbidden, `Requested uri (${path}) is out of base uri (${DAV_ROOT})`);
    return undefined;
  }
  // Sabre decodes the whole path, so an encoded slash here becomes a separator.
  const parts = decodeSegment(path.slice(DAV_ROOT.length))
    .split('/')
    .filter((s) => s !== '');
  if (parts[0] !== 'files' || parts[1] !== ctx.user || parts.length < 3) {
    ctx.reply.sabre(403, EX.forbidden, 'Destination is outside of the user folder');
    return undefined;
  }
  const names = parts.slice(2);
  for (const name of names) {
    const problem = checkName(name, ctx.state.series);
    if (problem) {
      ctx.reply.sabre(problem.status, problem.exception, problem.message);
      return undefined;
    }
  }
  return toUserPath(names);
}

export function overwriteFlag(ctx: DavContext): boolean | undefined {
  const v = (header(ctx, 'Overwrite') ?? 'T').trim().toUpperCase();
  if (v === 'T') return true;
  if (v === 'F') return false;
  ctx.reply.sabre(400, EX.badRequest, 'The HTTP Overwrite header should be either T or F');
  return undefined;
}

export async function moveOrCopy(ctx: DavContext, kind: 'MOVE' | 'COPY'): Promise<void> {
  const store = ctx.state.store;
  const from = ctx.target;
  if (from.rel === '') {
    ctx.reply.sabre(403, EX.forbidden, 'The home folder can not be moved or copied');
    return;
  }
  const to = destination(ctx);
  if (!to) return;
  const overwrite = overwriteFlag(ctx);
  if (overwrite === undefined) return;
  const source = await store.info(from.rel);
  const tokens = await checkPreconditions(ctx, source);
  if (!tokens) return;
  if (!source) return notFound(ctx);
  if (kind === 'MOVE' && !mayWrite(ctx, source, tokens)) return;
  if (from.spelled.join('/') === to.spelled.join('/')) {
    ctx.reply.sabre(403, EX.forbidden, 'Source and destination uri are identical.');
    return;
  }
  if (kind === 'COPY' && from.rel === to.rel) {
    ctx.reply.sabre(403, EX.forbidden, 'Source and destination uri are identical.');
    return;
  }
  if (from.rel === to.rel) {
    // Observed: the target (the source itself, in another normalisation) exists, so with
    // `Overwrite: F` the move is 412; otherwise that "existing target" is deleted first
    // (the source goes to the trash bin) and then the move fails with 404.
    if (!overwrite) return destinationExists(ctx);
    await discard(ctx, source.rel, source.kind, source.fileId);
    return notFound(ctx);
  }
  const toParent = await store.info(parentRel(to.rel));
  if (!toParent || toParent.kind !== 'folder') {
    ctx.reply.sabre(409, EX.conflict, 'The destination node is not found');
    return;
  }
  if (to.rel.startsWith(from.rel + '/')) {
    ctx.reply.sabre(
      409,
      EX.conflict,
      'Moving or copying a folder into its own subtree is not allowed',
    );
    return;
  }
  if (
    kind === 'MOVE' &&
    ctx.state.shares.rootOf(source.fileId) !== undefined &&
    ctx.state.shares.containing(parentRel(to.rel)) !== undefined
  ) {
    // Observed: a received share cannot be moved into another one.
    ctx.reply.sabre(403, ctx.state.series.shareIntoShareException, '');
    return;
  }
  const existing = await store.info(to.rel);
  if (!existing && isPartName(to.rel) && !overwrite) return destinationExists(ctx);
  if (refusePartName(ctx.reply, ctx.state.series, to.rel)) return;
  if (existing) {
    if (!overwrite) return destinationExists(ctx);
    if (!mayWrite(ctx, existing, tokens)) return;
    await discard(ctx, existing.rel, existing.kind, existing.fileId);
  }
  if (kind === 'MOVE') {
    await store.move(from.rel, to.rel);
    await noteMoved(ctx, from.rel, to.rel);
  } else {
    await fsp.cp(store.abs(from.rel), store.abs(to.rel), { recursive: true });
    store.touch(to.rel);
    await created(ctx, to.rel);
  }
  const moved = await store.info(to.rel);
  // Observed: a moved file comes back with its ETag, OC-ETag and OC-FileId; a folder,
  // and a copy, with its OC-FileId only.
  const headers =
    moved === undefined
      ? {}
      : moved.kind === 'file'
        ? {
            ETag: `"${moved.etag}"`,
            'OC-ETag': `"${moved.etag}"`,
            'OC-FileId': store.ocId(moved.fileId),
          }
        : { 'OC-FileId': store.ocId(moved.fileId) };
  const copied = moved === undefined ? {} : { 'OC-FileId': store.ocId(moved.fileId) };
  ctx.reply.empty(existing ? 204 : 201, kind === 'MOVE' ? headers : copied);
}

export function destinationExists(ctx: DavContext): void {
  ctx.reply.sabre(
    412,
    EX.preconditionFailed,
    'The destination node already exists, and the overwrite header is set to false',
  );
}
