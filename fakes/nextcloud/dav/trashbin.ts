/**
 * `/remote.php/dav/trashbin/<user>/`: `trash/` lists deleted items (`<name>.d<time>`
 * with nc:trashbin-filename, -original-location, -deletion-time); GET reads one;
 * MOVE to `restore/<item>` restores it; DELETE purges one item or (on `trash`) all.
 */
import { createReadStream } from 'node:fs';
import fsp from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { encodeHrefSegment } from '../paths.js';
import { EX } from '../reply.js';
import type { TrashItem } from '../trash.js';
import {
  child,
  escapeXml,
  NS,
  parseXml,
  propElement,
  ROOT_NS_ATTRS,
  XmlParseError,
} from '../xml.js';
import { readSmallBody } from './body.js';
import { header, type DavContext } from './context.js';
import { restored } from './file-events.js';
import { ALLPROP, httpDate, mimeOf } from './props.js';
import { splitClark } from './props.js';

export interface TrashContext extends Omit<DavContext, 'target' | 'base'> {
  /** Decoded segments after `/remote.php/dav/trashbin/<user>/`. */
  segments: string[];
}

const dav = (l: string) => `{${NS.dav}}${l}`;
const oc = (l: string) => `{${NS.oc}}${l}`;
const nc = (l: string) => `{${NS.nc}}${l}`;

function trashBase(ctx: TrashContext): string {
  return `/remote.php/dav/trashbin/${encodeHrefSegment(ctx.user)}`;
}

async function itemProps(ctx: TrashContext, item: TrashItem): Promise<Map<string, string>> {
  const st = await fsp.stat(ctx.state.trash.abs(item.id));
  const name = item.original.slice(item.original.lastIndexOf('/') + 1);
  const fileId = item.ids.get('') ?? 0;
  const props = new Map<string, string>([
    [dav('getlastmodified'), httpDate(st.mtimeMs)],
    [dav('resourcetype'), item.kind === 'folder' ? '<d:collection/>' : ''],
    [dav('getetag'), escapeXml(`"${item.id}"`)],
    [dav('displayname'), escapeXml(name)],
    [oc('fileid'), ctx.state.store.idText(fileId)],
    [oc('id'), ctx.state.store.ocId(fileId)],
    [oc('size'), String(await ctx.state.trash.size(item.id))],
    [nc('trashbin-filename'), escapeXml(name)],
    [nc('trashbin-original-location'), escapeXml(item.original)],
    [nc('trashbin-deletion-time'), String(item.deletedAt)],
  ]);
  if (item.kind === 'file') {
    props.set(dav('getcontentlength'), String(st.size));
    props.set(dav('getcontenttype'), escapeXml(mimeOf(name)));
  }
  return props;
}

function requested(body: string): string[] | 'all' | 'bad' {
  if (body.trim() === '') return 'all';
  try {
    const root = parseXml(body);
    const prop = child(root, NS.dav, 'prop');
    if (root.ns !== NS.dav || root.local !== 'propfind') return 'bad';
    return prop ? prop.children.map((c) => `{${c.ns}}${c.local}`) : 'all';
  } catch (e) {
    if (e instanceof XmlParseError) return 'bad';
    throw e;
  }
}

function response(href: string, props: Map<string, string>, wanted: string[] | 'all'): string {
  const names = wanted === 'all' ? ALLPROP.filter((p) => props.has(p)) : wanted;
  const ok: string[] = [];
  const missing: string[] = [];
  for (const clark of names) {
    const [ns, local] = splitClark(clark);
    const v = props.get(clark);
    if (v === undefined) missing.push(propElement(ns, local, null));
    else ok.push(propElement(ns, local, v));
  }
  const stat = (p: string[], s: string) =>
    p.length > 0
      ? `<d:propstat><d:prop>${p.join('')}</d:prop><d:status>HTTP/1.1 ${s}</d:status></d:propstat>`
      : '';
  return `<d:response><d:href>${href}</d:href>${stat(ok, '200 OK')}${stat(missing, '404 Not Found')}</d:response>`;
}

function missing(ctx: TrashContext): void {
  ctx.reply.sabre(
    404,
    EX.notFound,
    `File with name ${ctx.segments.join('/')} could not be located`,
  );
}

async function propfindTrash(ctx: TrashContext): Promise<void> {
  const body = await readSmallBody(ctx.req);
  const wanted = body === undefined ? 'bad' : requested(body);
  if (wanted === 'bad') {
    ctx.reply.sabre(400, EX.badRequest, 'The request body had an invalid XML body.');
    return;
  }
  const base = trashBase(ctx);
  const folderProps = new Map([[dav('resourcetype'), '<d:collection/>']]);
  const depth = (header(ctx, 'Depth') ?? '1').trim() === '0' ? 0 : 1;
  const [first, id, ...inner] = ctx.segments;
  const out: string[] = [];
  if (first === undefined) {
    out.push(response(`${base}/`, folderProps, wanted));
    if (depth > 0) {
      out.push(response(`${base}/trash/`, folderProps, wanted));
      out.push(response(`${base}/restore/`, folderProps, wanted));
    }
  } else if (first === 'trash' && id === undefined) {
    out.push(response(`${base}/trash/`, folderProps, wanted));
    if (depth > 0) {
      for (const item of ctx.state.trash.list()) {
        const href = `${base}/trash/${encodeHrefSegment(item.id)}${item.kind === 'folder' ? '/' : ''}`;
        out.push(response(href, await itemProps(ctx, item), wanted));
      }
    }
  } else if (first === 'restore' && id === undefined) {
    out.push(response(`${base}/restore/`, folderProps, wanted));
  } else {
    const item = first === 'trash' && id !== undefined ? ctx.state.trash.get(id) : undefined;
    if (!item || inner.length > 0) return missing(ctx);
    const href = `${base}/trash/${encodeHrefSegment(item.id)}${item.kind === 'folder' ? '/' : ''}`;
    out.push(response(href, await itemProps(ctx, item), wanted));
  }
  ctx.reply.xml(207, `<d:multistatus ${ROOT_NS_ATTRS}>${out.join('')}</d:multistatus>`);
}

async function getTrash(ctx: TrashContext, item: TrashItem): Promise<void> {
  if (item.kind === 'folder') {
    ctx.reply.send(200, '<!DOCTYPE html><html><body>WebDAV</body></html>', {
      'Content-Type': 'text/html; charset=UTF-8',
    });
    return;
  }
  const st = await fsp.stat(ctx.state.trash.abs(item.id));
  ctx.res.writeHead(200, { 'Content-Type': mimeOf(item.id), 'Content-Length': st.size });
  if (ctx.req.method === 'HEAD') {
    ctx.res.end();
    return;
  }
  await pipeline(createReadStream(ctx.state.trash.abs(item.id)), ctx.res);
}

export async function trashbin(ctx: TrashContext): Promise<void> {
  if (!ctx.state.faults.trashbin) {
    ctx.reply.sabre(404, EX.notFound, 'File with name trashbin could not be located');
    return;
  }
  const method = ctx.req.method ?? '';
  const [first, id, ...inner] = ctx.segments;
  if (method === 'PROPFIND') return propfindTrash(ctx);
  if (method === 'DELETE' && first === 'trash' && id === undefined) {
    await ctx.state.trash.purgeAll();
    ctx.reply.empty(204);
    return;
  }
  const item =
    first === 'trash' && id !== undefined && inner.length === 0
      ? ctx.state.trash.get(id)
      : undefined;
  if (!item) return missing(ctx);
  if (method === 'GET' || method === 'HEAD') return getTrash(ctx, item);
  if (method === 'DELETE') {
    await ctx.state.trash.purge(item.id);
    ctx.reply.empty(204);
    return;
  }
  if (method === 'MOVE') {
    const dest = header(ctx, 'Destination') ?? '';
    const want = `/remote.php/dav/trashbin/${encodeHrefSegment(ctx.user)}/restore/`;
    if (
      !decodeURIComponentSafe(dest.replace(/^[a-z]+:\/\/[^/]*/i, '')).startsWith(
        decodeURIComponentSafe(want),
      )
    ) {
      ctx.reply.sabre(403, EX.forbidden, 'Trashbin items can only be moved to restore/');
      return;
    }
    // Observed: with `Overwrite: F` a restore is always 412 (the restore target counts as
    // existing), wherever the item would go; without it a taken place gets the item
    // beside it as "<name> (restored)".
    if ((header(ctx, 'Overwrite') ?? '').trim().toUpperCase() === 'F') {
      ctx.reply.sabre(
        412,
        EX.preconditionFailed,
        'The destination node already exists, and the overwrite header is set to false',
      );
      return;
    }
    await restored(ctx, await ctx.state.trash.restore(item.id));
    ctx.reply.empty(201);
    return;
  }
  ctx.reply.sabre(405, EX.methodNotAllowed, `${method} is not allowed on trashbin items`);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
