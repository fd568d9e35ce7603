/**
 * Chunked upload v2 (`/remote.php/dav/uploads/<user>/<id>/…`), as Nextcloud 29 with
 * local storage answers it (observed; docs/nextcloud-behaviour.md "Chunked upload"):
 *
 * - `MKCOL <id>`: 201; again 405; inside an upload folder 403. The `<user>` segment is
 *   not checked: it is always the authenticated user's own folder.
 * - `PUT <id>/<name>`: 201 without an ETag (204 with a new one for a name sent before); `X-Hash` answers the
 *   chunk's hash; `.file` 403; into a missing folder 404.
 * - `MOVE <id>/.file`: If-Match / If-None-Match are checked against `.file` (so they
 *   always fail); the `If` header's tagged lists against their resource, its untagged
 *   ones against `.file` with the destination's locks; then the destination's folder
 *   (409), its lock (423), `Overwrite: F` onto an existing file (412), a folder (400),
 *   `OC-Total-Length` against the chunks (400). Refused: the folder stays. Done: the
 *   chunks, in natural order of their names, become the file (201 new, 204 replaced,
 *   keeping its id), `X-Hash` answers its hash, and the folder is gone.
 * - `DELETE <id>`: 204, then 404. One that meets the cleanup of a cut chunk PUT can
 *   answer 403 with an empty message and leave the folder (the `uploadDeleteForbidden`
 *   fault); sent again, it succeeds.
 */
import { randomBytes } from 'node:crypto';
import { parseIfHeader } from '../locks.js';
import { baseName, parentRel, type UserPath } from '../paths.js';
import { EX } from '../reply.js';
import type { NodeInfo } from '../store.js';
import { ShortBodyError } from '../store.js';
import { sendContinue } from '../continue.js';
import { readSmallBody } from './body.js';
import { ifNotHeld, locksCovering, mayWrite, taggedRel } from './conditions.js';
import { davBase, header, type DavContext } from './context.js';
import { beforeOverwrite, written as noteWritten } from './file-events.js';
import { destination, destinationExists, overwriteFlag } from './move.js';
import { insufficientStorage, overQuota } from './quota.js';
import { isPartName } from './write-checks.js';
import { hashingPassThrough, knownHashHeaders } from './x-hash.js';

/** The request under `uploads/<user>/`: the folder id and the name inside it, if any. */
export interface UploadTarget {
  id: string | undefined;
  name: string | undefined;
  /** More than `<id>/<name>`. */
  deeper: boolean;
}

export async function uploads(ctx: DavContext, at: UploadTarget): Promise<void> {
  const method = ctx.req.method ?? '';
  const folders = ctx.state.uploads;
  if (at.id === undefined || at.deeper) {
    ctx.reply.sabre(403, EX.forbidden, 'Permission denied');
    return;
  }
  const folder = folders.get(at.id);
  if (method === 'MKCOL') {
    if (at.name !== undefined) {
      ctx.reply.sabre(403, EX.forbidden, `Permission denied to create file (filename ${at.name})`);
      return;
    }
    if ((await readSmallBody(ctx.req)) !== '') {
      ctx.reply.sabre(
        415,
        EX.unsupportedMediaType,
        'The request body for the MKCOL request must have an xml Content-Type',
      );
      return;
    }
    if (folder !== undefined) {
      ctx.reply.sabre(405, EX.methodNotAllowed, 'The resource you tried to create already exists');
      return;
    }
    await folders.create(at.id);
    ctx.reply.empty(201);
    return;
  }
  if (folder === undefined) {
    ctx.reply.sabre(
      404,
      EX.notFound,
      `File with name ${ctx.state.series.notFoundPrefix}${at.id} could not be located`,
    );
    return;
  }
  if (method === 'DELETE' && at.name === undefined) {
    if (ctx.state.faults.uploadDeleteForbidden > 0) {
      ctx.state.faults.uploadDeleteForbidden -= 1;
      ctx.reply.sabre(403, EX.forbidden, '');
      return;
    }
    await folders.remove(at.id);
    ctx.reply.empty(204);
    return;
  }
  if (method === 'PUT' && at.name !== undefined) {
    if (at.name === '.file') {
      ctx.reply.sabre(403, EX.forbidden, 'Permission denied to put into this file');
      return;
    }
    return putChunk(ctx, at.id, at.name);
  }
  if (method === 'MOVE' && at.name === '.file') return commit(ctx, at.id, folder.etag);
  ctx.reply.sabre(403, EX.forbidden, 'Permission denied');
}

async function putChunk(ctx: DavContext, id: string, name: string): Promise<void> {
  const total = header(ctx, 'OC-Total-Length');
  if (total !== undefined && (await overQuota(ctx, Number(total), destinationFolder(ctx))))
    return insufficientStorage(ctx, destinationFolder(ctx));
  const lengthHeader = header(ctx, 'Content-Length');
  const expected = lengthHeader === undefined ? undefined : Number(lengthHeader);
  sendContinue(ctx.req);
  let stored: Awaited<ReturnType<typeof ctx.state.uploads.putChunk>>;
  try {
    stored = await ctx.state.uploads.putChunk(id, name, ctx.req, expected, header(ctx, 'X-Hash'));
  } catch (e) {
    if (e instanceof ShortBodyError) {
      ctx.reply.sabre(
        400,
        EX.badRequest,
        `Expected filesize of ${e.expected} bytes but read (from Nextcloud client) and wrote (to Nextcloud storage) ${e.received} bytes.`,
      );
      return;
    }
    if (ctx.req.destroyed || ctx.req.readableAborted) return;
    throw e;
  }
  // Observed: a new chunk is answered without an etag, a replaced one with a fresh etag.
  const tag = `"${randomBytes(16).toString('hex')}"`;
  ctx.reply.empty(stored.replaced ? 204 : 201, {
    ...(stored.replaced ? { ETag: tag, 'OC-ETag': tag } : {}),
    ...knownHashHeaders(header(ctx, 'X-Hash'), stored.hashes, ctx.state.faults.xHash),
  });
}

/** The folder (user-relative) of a chunk's `Destination`, as a quota refusal names it. */
function destinationFolder(ctx: DavContext): string {
  const match = /\/remote\.php\/dav\/files\/[^/]+\/(.*)$/.exec(header(ctx, 'Destination') ?? '');
  if (match?.[1] === undefined) return '';
  try {
    return parentRel(decodeURIComponent(match[1]));
  } catch {
    return '';
  }
}

/** The conditions of a MOVE of `.file`; answers and returns undefined when one fails. */
async function commitConditions(
  ctx: DavContext,
  files: DavContext,
  folderEtag: string,
  dest: NodeInfo | undefined,
): Promise<ReadonlySet<string> | undefined> {
  const source = `"${folderEtag}"`;
  const matches = (list: string) =>
    list.split(',').some((t) => ['*', source].includes(t.trim().replace(/^W\//, '')));
  const ifMatch = header(ctx, 'If-Match');
  if (ifMatch !== undefined && !matches(ifMatch)) {
    ctx.reply.sabre(
      412,
      EX.preconditionFailed,
      'An If-Match header was specified, but none of the specified ETags matched.',
      { ETag: source },
    );
    return undefined;
  }
  const ifNoneMatch = header(ctx, 'If-None-Match');
  if (ifNoneMatch !== undefined && matches(ifNoneMatch)) {
    ctx.reply.sabre(
      412,
      EX.preconditionFailed,
      'An If-None-Match header was specified, but the ETag matched (or * was specified).',
    );
    return undefined;
  }
  const tokens = new Set<string>();
  const ifHeader = header(ctx, 'If');
  if (ifHeader === undefined) return tokens;
  const lists = parseIfHeader(ifHeader);
  if (!lists) {
    ctx.reply.sabre(400, EX.badRequest, 'The If header could not be parsed');
    return undefined;
  }
  let anyHeld = false;
  for (const list of lists) {
    const rel = list.resource === undefined ? undefined : taggedRel(files, list.resource);
    const resource = rel === undefined ? undefined : await ctx.state.store.info(rel);
    if (list.resource !== undefined && resource === undefined) {
      if (list.conditions.some((c) => c.kind === 'etag' && c.value !== '')) {
        ctx.reply.sabre(
          404,
          EX.notFound,
          `File with name ${ctx.state.series.notFoundPrefix}${rel ?? ''} could not be located`,
        );
        return undefined;
      }
    }
    // An untagged list is about `.file`: its etag is the folder's, its locks the destination's.
    const held = await locksCovering(files, rel ?? files.target.rel);
    const etag = list.resource === undefined ? source : resource && `"${resource.etag}"`;
    const ok = list.conditions.every((c) => {
      const match =
        c.kind === 'token'
          ? held.includes(c.value)
          : c.value === '' || c.value.replace(/^W\//, '') === etag;
      return c.not ? !match : match;
    });
    if (!ok) continue;
    anyHeld = true;
    for (const c of list.conditions) if (c.kind === 'token' && !c.not) tokens.add(c.value);
  }
  if (anyHeld) return tokens;
  ifNotHeld(files, dest, lists, `files/${ctx.user}/${files.target.rel}`);
  return undefined;
}

async function commit(ctx: DavContext, id: string, folderEtag: string): Promise<void> {
  const store = ctx.state.store;
  const folders = ctx.state.uploads;
  const raw = header(ctx, 'Destination') ?? '';
  const to: UserPath | undefined = destination(ctx);
  if (!to) {
    // Observed: a `.htaccess` destination is refused and the upload folder goes with it.
    if (/\/\.htaccess$/i.test(decodeURIComponent(raw))) await folders.remove(id);
    return;
  }
  const overwrite = overwriteFlag(ctx);
  if (overwrite === undefined) return;
  const files: DavContext = { ...ctx, target: to, base: davBase(ctx.user) };
  const existing = await store.info(to.rel);
  const tokens = await commitConditions(ctx, files, folderEtag, existing);
  if (!tokens) return;
  const parent = await store.info(parentRel(to.rel));
  if (!parent || parent.kind !== 'folder') {
    ctx.reply.sabre(409, EX.conflict, 'The destination node is not found');
    return;
  }
  if (existing && !mayWrite(files, existing, tokens)) return;
  if (existing && !overwrite) return destinationExists(ctx);
  if (existing?.kind === 'folder') {
    ctx.reply.sabre(
      400,
      EX.badRequest,
      `The given destination files/${ctx.user}/${to.rel} is a directory.`,
    );
    return;
  }
  const chunks = await folders.chunks(id);
  const total = chunks.reduce((n, c) => n + c.size, 0);
  const announced = header(ctx, 'OC-Total-Length');
  if (announced !== undefined && Number(announced) !== total) {
    ctx.reply.sabre(
      400,
      EX.badRequest,
      `Chunks on server do not sum up to ${announced} but to ${total} bytes`,
    );
    return;
  }
  if (await overQuota(ctx, total, to.rel)) return insufficientStorage(ctx, parentRel(to.rel));
  if (isPartName(to.rel)) {
    // Observed: written under that name, never listed, and answered with an empty ETag.
    await folders.remove(id);
    ctx.reply.empty(201, { ETag: '""' });
    return;
  }
  // One pass: the chunks are concatenated into the file and hashed on the way.
  const hashing = hashingPassThrough(header(ctx, 'X-Hash'));
  const assembled = folders.assembled(
    id,
    chunks.map((c) => c.name),
  );
  await beforeOverwrite(files, existing);
  await store.writeFrom(to.rel, assembled.pipe(hashing.stream), total);
  await noteWritten(files, existing, to.rel);
  await folders.remove(id);
  const written = await store.info(to.rel);
  if (!written) throw new Error(`fake nextcloud: ${baseName(to.rel)} vanished after MOVE`);
  ctx.reply.empty(existing ? 204 : 201, {
    ETag: `"${written.etag}"`,
    'OC-ETag': `"${written.etag}"`,
    'OC-FileId': store.ocId(written.fileId),
    ...knownHashHeaders(header(ctx, 'X-Hash'), hashing.digests(), ctx.state.faults.xHash),
  });
}
