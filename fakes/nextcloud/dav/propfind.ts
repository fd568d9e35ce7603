/**
 * PROPFIND: 207 multistatus, the target first, then (Depth 1) its children or
 * (Depth infinity, honoured like Nextcloud) the whole subtree. Hrefs echo the
 * request's spelling; unknown properties go to a separate 404 propstat.
 */
import { EX } from '../reply.js';
import type { NodeInfo } from '../store.js';
import { child, NS, parseXml, propElement, ROOT_NS_ATTRS, XmlParseError } from '../xml.js';
import { readSmallBody } from './body.js';
import { checkPreconditions } from './conditions.js';
import { header, hrefOf, notFound, type DavContext } from './context.js';
import { ALLPROP, PRODUCERS, splitClark } from './props.js';

type Request =
  { kind: 'allprop'; include: string[] } | { kind: 'prop'; props: string[] } | { kind: 'propname' };

function parseRequest(body: string): Request | 'bad' {
  if (body.trim() === '') return { kind: 'allprop', include: [] };
  let root;
  try {
    root = parseXml(body);
  } catch (e) {
    if (e instanceof XmlParseError) return 'bad';
    throw e;
  }
  if (root.ns !== NS.dav || root.local !== 'propfind') return 'bad';
  const names = (el: { children: { ns: string; local: string }[] } | undefined) =>
    (el?.children ?? []).map((c) => `{${c.ns}}${c.local}`);
  if (child(root, NS.dav, 'propname')) return { kind: 'propname' };
  const prop = child(root, NS.dav, 'prop');
  if (prop) return { kind: 'prop', props: names(prop) };
  if (child(root, NS.dav, 'allprop')) {
    return { kind: 'allprop', include: names(child(root, NS.dav, 'include')) };
  }
  return 'bad';
}

interface Listed {
  node: NodeInfo;
  spelled: string[];
}

async function collect(ctx: DavContext, first: Listed, depth: number): Promise<Listed[]> {
  const out = [first];
  if (depth === 0 || first.node.kind !== 'folder') return out;
  for (const c of await ctx.state.store.children(first.node.rel)) {
    out.push(...(await collect(ctx, { node: c, spelled: [...first.spelled, c.name] }, depth - 1)));
  }
  return out;
}

function propstat(props: string[], status: string): string {
  return `<d:propstat><d:prop>${props.join('')}</d:prop><d:status>HTTP/1.1 ${status}</d:status></d:propstat>`;
}

async function responseFor(ctx: DavContext, item: Listed, request: Request): Promise<string> {
  const found: string[] = [];
  const missing: string[] = [];
  const wanted =
    request.kind === 'prop'
      ? request.props
      : request.kind === 'allprop'
        ? [...ALLPROP, ...request.include]
        : [...PRODUCERS.keys()];
  for (const clark of wanted) {
    const [ns, local] = splitClark(clark);
    const producer = PRODUCERS.get(clark);
    const value = producer ? await producer(ctx, item.node) : undefined;
    if (value === undefined) {
      // allprop leaves out what a node lacks; an explicit request gets it back as 404.
      if (
        request.kind === 'prop' ||
        (request.kind === 'allprop' && request.include.includes(clark))
      ) {
        missing.push(propElement(ns, local, null));
      }
    } else {
      found.push(propElement(ns, local, request.kind === 'propname' ? null : value));
    }
  }
  const href = hrefOf(ctx.base, item.spelled, item.node.kind === 'folder');
  return (
    `<d:response><d:href>${href}</d:href>` +
    (found.length > 0 ? propstat(found, '200 OK') : '') +
    (missing.length > 0 ? propstat(missing, '404 Not Found') : '') +
    '</d:response>'
  );
}

/** One `<d:response>` with exactly these properties (Clark names), as PROPFIND gives it. */
export function propResponse(
  ctx: DavContext,
  node: NodeInfo,
  spelled: string[],
  props: string[],
): Promise<string> {
  return responseFor(ctx, { node, spelled }, { kind: 'prop', props });
}

export async function propfind(ctx: DavContext): Promise<void> {
  const body = await readSmallBody(ctx.req);
  const request = body === undefined ? 'bad' : parseRequest(body);
  if (request === 'bad') {
    ctx.reply.sabre(400, EX.badRequest, 'The request body had an invalid XML body.');
    return;
  }
  const node = await ctx.state.store.info(ctx.target.rel);
  if (!node) return notFound(ctx);
  if (!(await checkPreconditions(ctx, node))) return;
  const depthHeader = (header(ctx, 'Depth') ?? '1').trim().toLowerCase();
  const depth = depthHeader === '0' ? 0 : depthHeader === 'infinity' ? Infinity : 1;
  const items = await collect(ctx, { node, spelled: ctx.target.spelled }, depth);
  const responses: string[] = [];
  for (const item of items) responses.push(await responseFor(ctx, item, request));
  ctx.reply.xml(207, `<d:multistatus ${ROOT_NS_ATTRS}>${responses.join('')}</d:multistatus>`, {
    Vary: 'Brief,Prefer',
  });
}
