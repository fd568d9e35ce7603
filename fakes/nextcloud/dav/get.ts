/**
 * GET/HEAD: a file streams from disk with its ETag (Range → 206/416, If-None-Match → 304,
 * see conditions.ts); a folder answers 200 text/html without an ETag, Nextcloud's banner
 * page. No file is ever served as text/html (see servedType).
 */
import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EX } from '../reply.js';
import type { NodeInfo } from '../store.js';
import { checkPreconditions } from './conditions.js';
import { header, notFound, type DavContext } from './context.js';
import { httpDate, mimeOf } from './props.js';

const BANNER =
  '<!DOCTYPE html>\n<html><head><title>Nextcloud</title></head><body>\n' +
  '<p>This is the WebDAV interface. It can only be accessed by WebDAV clients such as the Nextcloud desktop sync client.</p>\n' +
  '</body></html>\n';

export type Range = { start: number; end: number } | 'unsatisfiable' | undefined;

/** Sabre's single-range parsing: `bytes=a-b`, `bytes=a-`, `bytes=-n`; anything else is ignored. */
export function parseRange(value: string | undefined, size: number): Range {
  const m = value === undefined ? null : /^bytes=([0-9]*)-([0-9]*)$/.exec(value.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] !== '') {
    const start = Number(m[1]);
    const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start >= size || (m[2] !== '' && Number(m[2]) < start)) return 'unsatisfiable';
    return { start, end };
  }
  const suffix = Number(m[2]);
  if (size === 0 || suffix === 0) return 'unsatisfiable';
  return { start: Math.max(0, size - suffix), end: size - 1 };
}

/** The `flipByte` fault: the first byte of the body arrives altered. */
function flipFirstByte(): Transform {
  let flipped = false;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (!flipped && chunk.length > 0) {
        const copy = Buffer.from(chunk);
        copy[0] = (copy[0] ?? 0) ^ 0xff;
        flipped = true;
        done(null, copy);
      } else {
        done(null, chunk);
      }
    },
  });
}

/** What a browser could run or render as a page: Nextcloud serves it as plain text. */
const SERVED_AS_TEXT = new Set([
  'text/html',
  'image/svg+xml',
  'application/json',
  'application/xml',
  'application/javascript',
  'application/yaml',
]);

/**
 * The Content-Type of a file's GET, as observed: the type PROPFIND names, except that
 * HTML, SVG, JSON, XML, JavaScript and YAML come as text/plain, and every text type
 * names its charset.
 */
function servedType(name: string): string {
  const type = mimeOf(name);
  const served = SERVED_AS_TEXT.has(type) ? 'text/plain' : type;
  return served.startsWith('text/') ? `${served};charset=UTF-8` : served;
}

function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|"/g, '_');
  return `attachment; filename*=UTF-8''${encodeURIComponent(name)}; filename="${ascii}"`;
}

async function sendFile(ctx: DavContext, node: NodeInfo): Promise<void> {
  let range = parseRange(header(ctx, 'Range'), node.size);
  const ifRange = header(ctx, 'If-Range');
  if (range !== undefined && ifRange !== undefined && ifRange !== `"${node.etag}"`)
    range = undefined;
  if (range === 'unsatisfiable') {
    // Observed: the file's ETag and Last-Modified, and no Content-Range.
    const start = /^bytes=(\d*)-/.exec(header(ctx, 'Range')?.trim() ?? '')?.[1] ?? '';
    ctx.reply.sabre(
      416,
      EX.rangeNotSatisfiable,
      `The start offset (${start}) exceeded the size of the entity (${node.size})`,
      { ETag: `"${node.etag}"`, 'Last-Modified': httpDate(node.mtimeMs) },
    );
    return;
  }
  const start = range?.start ?? 0;
  const end = range?.end ?? node.size - 1;
  const length = Math.max(0, end - start + 1);
  ctx.res.writeHead(range ? 206 : 200, {
    'Content-Type': servedType(node.name),
    'Content-Length': length,
    ETag: `"${node.etag}"`,
    'OC-ETag': `"${node.etag}"`,
    'Last-Modified': httpDate(node.mtimeMs),
    'Accept-Ranges': 'bytes',
    'Content-Disposition': contentDisposition(node.name),
    'X-Accel-Buffering': 'no',
    ...(range ? { 'Content-Range': `bytes ${start}-${end}/${node.size}` } : {}),
  });
  if (ctx.req.method === 'GET')
    ctx.state.adminAudit.file(ctx.user, { kind: 'accessed', fileId: node.fileId, path: node.rel });
  if (ctx.req.method === 'HEAD' || length === 0) {
    ctx.res.end();
    return;
  }
  const source = createReadStream(ctx.state.store.abs(node.rel), { start, end });
  try {
    if (ctx.state.faults.flipByte) await pipeline(source, flipFirstByte(), ctx.res);
    else await pipeline(source, ctx.res);
  } catch {
    // The client went away or the file vanished mid-stream: the socket is already gone.
    ctx.res.destroy();
  }
}

export async function get(ctx: DavContext): Promise<void> {
  const node = await ctx.state.store.info(ctx.target.rel);
  if (!node) return notFound(ctx);
  if (!(await checkPreconditions(ctx, node))) return;
  if (node.kind === 'folder') {
    ctx.reply.send(200, BANNER, { 'Content-Type': 'text/html; charset=UTF-8' });
    return;
  }
  await sendFile(ctx, node);
}
