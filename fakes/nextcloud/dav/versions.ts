/**
 * `/remote.php/dav/versions/<user>/` as Nextcloud 34.0.1 and 29.0.5 answer it (the model
 * is ../versions.ts): `versions/<fileid>` lists a file's entries (Depth 1; 404 for an id
 * no file has, or a folder's), `versions/<fileid>/<seconds>` is read with GET (404 for
 * the entry of the current content; the first read of an entry whose saved content a
 * restore took is a 500, see readOfTakenVersion) and restored with MOVE to
 * `restore/<anything>`:
 * the file keeps its id and takes the version's mtime. `Overwrite: F` on that MOVE is
 * always 412 (the restore target counts as existing). Another user's versions: 403.
 */
import { createReadStream } from 'node:fs';
import fsp from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { encodeHrefSegment } from '../paths.js';
import { EX } from '../reply.js';
import { NS } from '../xml.js';
import { readSmallBody } from './body.js';
import { parseRange } from './get.js';
import { requestIdRule } from '../request-id.js';
import { header, type DavContext } from './context.js';
import { MULTISTATUS_OPEN, requestedProps, response } from './groupware-props.js';
import { httpDate, mimeOf } from './props.js';

export interface VersionsContext extends Omit<DavContext, 'target' | 'base'> {
  /** Decoded segments after `/remote.php/dav/versions/`: the owner, then the rest. */
  segments: string[];
}

const dav = (local: string): string => `{${NS.dav}}${local}`;
const nc = (local: string): string => `{${NS.nc}}${local}`;
const DEFAULT_PROPS = ['getlastmodified', 'getcontentlength', 'resourcetype', 'getetag'].map(dav);

function notFound(ctx: VersionsContext): void {
  ctx.reply.sabre(404, EX.notFound, '');
}

/** The file the id names, if a file has it now. */
async function fileOf(ctx: VersionsContext, id: string | undefined) {
  const fileId = id === undefined ? undefined : ctx.state.store.fileIdOf(id);
  const rel = fileId === undefined ? undefined : ctx.state.store.relOfId(fileId);
  const node = rel === undefined ? undefined : await ctx.state.store.info(rel);
  return node?.kind === 'file' ? node : undefined;
}

async function list(ctx: VersionsContext, id: string): Promise<void> {
  const body = (await readSmallBody(ctx.req)) ?? '';
  const asked =
    body.trim() === '' ? [...DEFAULT_PROPS, dav('getcontenttype')] : requestedProps(body);
  if (asked === undefined) {
    ctx.reply.sabre(400, EX.badRequest, 'The request body had an invalid XML body.');
    return;
  }
  const node = await fileOf(ctx, id);
  if (node === undefined) return notFound(ctx);
  const base = `/remote.php/dav/versions/${encodeHrefSegment(ctx.user)}/versions/${id}/`;
  const parts = [response(base, new Map([[dav('resourcetype'), '<d:collection/>']]), asked)];
  if ((header(ctx, 'Depth') ?? '1').trim() !== '0') {
    for (const entry of ctx.state.versions.list(node.fileId)) {
      const props = new Map([
        [dav('getlastmodified'), httpDate(entry.seconds * 1000)],
        [dav('getcontentlength'), String(entry.size)],
        [dav('resourcetype'), ''],
        [dav('getetag'), String(entry.seconds)],
        [dav('getcontenttype'), mimeOf(node.name)],
        [nc('version-author'), ctx.user],
        [nc('has-preview'), 'true'],
      ]);
      parts.push(response(`${base}${entry.seconds}`, props, asked));
    }
  }
  ctx.reply.xml(207, `${MULTISTATUS_OPEN}${parts.join('')}</d:multistatus>`);
}

async function read(ctx: VersionsContext, id: string, name: string): Promise<void> {
  const node = await fileOf(ctx, id);
  const saved =
    node === undefined || !/^\d+$/.test(name)
      ? undefined
      : await ctx.state.versions.savedContent(node.fileId, Number(name));
  if (
    node !== undefined &&
    saved === undefined &&
    ctx.state.versions.takeFirstReadAfterRestore(node.fileId, Number(name))
  )
    return readOfTakenVersion(ctx, node, Number(name));
  if (node === undefined || saved === undefined) return notFound(ctx);
  const { size } = await fsp.stat(saved);
  // A range as a file's GET takes one (observed: 206 with Content-Range).
  const range = parseRange(header(ctx, 'Range'), size);
  const part = range === undefined || range === 'unsatisfiable' ? undefined : range;
  // Observed: the version's name, unquoted, as its ETag.
  ctx.res.writeHead(part === undefined ? 200 : 206, {
    'Content-Type': mimeOf(node.name),
    'Content-Length': part === undefined ? size : part.end - part.start + 1,
    ETag: name,
    'OC-ETag': name,
    ...(part === undefined ? {} : { 'Content-Range': `bytes ${part.start}-${part.end}/${size}` }),
  });
  if (ctx.req.method === 'HEAD') {
    ctx.res.end();
    return;
  }
  await pipeline(createReadStream(saved, part ?? {}), ctx.res);
}

/**
 * The first read of an entry whose file a restore took (observed on 34 and 29): PHP
 * fails (`TypeError`) as it opens the version: 500 with the version's ETag and the
 * Sabre error. A plain GET has sent the version's headers first (request id, OC-ETag,
 * its size as Content-Length, so the error is cut to it); a ranged one has not.
 */
function readOfTakenVersion(
  ctx: VersionsContext,
  node: { fileId: number; name: string },
  seconds: number,
): void {
  const ranged = header(ctx, 'Range') !== undefined;
  const error =
    '<?xml version="1.0" encoding="utf-8"?>\n<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n' +
    `  <s:exception>TypeError</s:exception>\n  <s:message>${ctx.state.series.versionGoneMessage}</s:message>\n</d:error>\n`;
  if (!ranged) requestIdRule(ctx.res, 'always');
  const body = ranged
    ? error
    : error.slice(0, ctx.state.versions.sizeOf(node.fileId, seconds) ?? 0);
  ctx.res.writeHead(500, {
    'Content-Type': 'application/xml; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ETag: String(seconds),
    ...(ranged ? {} : { 'OC-ETag': String(seconds) }),
    'Last-Modified': httpDate(seconds * 1000),
  });
  ctx.res.end(body);
}

async function restore(ctx: VersionsContext, id: string, name: string): Promise<void> {
  const target = (header(ctx, 'Destination') ?? '').replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
  if (!target.startsWith(`/remote.php/dav/versions/${encodeHrefSegment(ctx.user)}/restore/`)) {
    ctx.reply.sabre(403, EX.forbidden, '');
    return;
  }
  if ((header(ctx, 'Overwrite') ?? 'T').trim().toUpperCase() === 'F') {
    ctx.reply.sabre(
      412,
      EX.preconditionFailed,
      'The destination node already exists, and the overwrite header is set to false',
    );
    return;
  }
  const node = await fileOf(ctx, id);
  const seconds = Number(name);
  if (node === undefined || !/^\d+$/.test(name) || !ctx.state.versions.has(node.fileId, seconds))
    return notFound(ctx);
  const { store } = ctx.state;
  const current = {
    fileId: node.fileId,
    abs: store.abs(node.rel),
    mtimeSeconds: Math.floor(node.mtimeMs / 1000),
    size: node.size,
  };
  // Observed: a restore records no activity.
  // The version's content comes back as another file on disk: a new etag, whatever its
  // mtime and size (observed).
  if (await ctx.state.versions.restore(current, seconds))
    await store.setMtime(node.rel, seconds, { replaced: true });
  ctx.reply.empty(201);
}

export async function versions(ctx: VersionsContext): Promise<void> {
  const [owner, area, id, name, ...rest] = ctx.segments;
  if (owner !== ctx.user) {
    ctx.reply.sabre(403, EX.forbidden, '');
    return;
  }
  const method = ctx.req.method ?? '';
  if (area === 'versions' && id !== undefined && rest.length === 0) {
    if (name === undefined && method === 'PROPFIND') return list(ctx, id);
    if (name !== undefined && (method === 'GET' || method === 'HEAD')) return read(ctx, id, name);
    if (name !== undefined && method === 'MOVE') return restore(ctx, id, name);
  }
  if (area === 'restore' && id === undefined && method === 'PROPFIND') {
    const href = `/remote.php/dav/versions/${encodeHrefSegment(ctx.user)}/restore/`;
    const asked = requestedProps((await readSmallBody(ctx.req)) ?? '') ?? [dav('resourcetype')];
    const listing = response(href, new Map([[dav('resourcetype'), '<d:collection/>']]), asked);
    ctx.reply.xml(207, `${MULTISTATUS_OPEN}${listing}</d:multistatus>`);
    return;
  }
  if (name === undefined && id !== undefined && area === 'versions') return notFound(ctx);
  ctx.reply.sabre(
    501,
    EX.notImplemented,
    `There was no plugin in the system that was willing to handle this ${method} method.`,
  );
}
