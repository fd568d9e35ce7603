/**
 * SEARCH (RFC 5323 basicsearch) on `/remote.php/dav/`, as Nextcloud 29 on SQLite answers
 * it (docs/nextcloud-behaviour.md, "Search"):
 *
 * - the scope is `/files/<user>/<path>` relative to the DAV root, **not** percent-decoded;
 *   a missing folder is 404, a file (or another user's files) 500, a dot segment 400;
 *   depth is ignored (always the whole subtree);
 * - `d:like` is SQLite's `LIKE … ESCAPE '\'` on the name: `%` any run, `_` one
 *   character, `\` escapes; ASCII letters ignore case, nothing else does;
 * - the rows are ordered (`d:orderby`, ties in file-id order), then `d:limit`
 *   (`nresults`, SearchDAV's `firstresult`) cuts them, and only then is the folder
 *   itself dropped: a matching folder takes a place in the page although it is never
 *   returned (without an order it comes last);
 * - a body that is not XML (by its Content-Type) is not taken at all (501).
 */
import { checkName } from '../paths.js';
import { EX } from '../reply.js';
import { requestIdRule } from '../request-id.js';
import type { NodeInfo } from '../store.js';
import { child, NS, parseXml, ROOT_NS_ATTRS, XmlParseError, type XmlElement } from '../xml.js';
import { readSmallBody } from './body.js';
import { header, type DavContext } from './context.js';
import { propResponse } from './propfind.js';
import { mimeOf } from './props.js';

const SEARCHDAV_NS = 'https://github.com/icewind1991/SearchDAV/ns';

class BadSearch extends Error {}

type Matcher = (node: NodeInfo) => boolean;

interface Order {
  key: (node: NodeInfo) => Promise<string | number> | string | number;
  descending: boolean;
}

const clark = (el: XmlElement): string => `{${el.ns}}${el.local}`;
const dav = (local: string): string => `{${NS.dav}}${local}`;
const oc = (local: string): string => `{${NS.oc}}${local}`;

/** The one property named by an operator's `d:prop`. */
function propOf(el: XmlElement): string {
  const prop = child(el, NS.dav, 'prop')?.children[0];
  if (prop === undefined) throw new BadSearch('an operator without a property');
  return clark(prop);
}

function literalOf(el: XmlElement): string {
  const literal = child(el, NS.dav, 'literal');
  if (literal === undefined) throw new BadSearch('an operator without a literal');
  return literal.text;
}

const lowerAscii = (s: string): string =>
  s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

const escapeRegExp = (c: string): string => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** SQLite `LIKE` with `ESCAPE '\'`: ASCII case-insensitive, `_` is one code point. */
export function sqliteLike(pattern: string, value: string): boolean {
  let source = '';
  const chars = Array.from(lowerAscii(pattern));
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === '\\' && i + 1 < chars.length) {
      i += 1;
      source += escapeRegExp(chars[i] as string);
    } else if (c === '%') source += '[\\s\\S]*';
    else if (c === '_') source += '[\\s\\S]';
    else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, 'u').test(lowerAscii(value));
}

/** `idText` spells a file id as the server shows it (store.ts). */
function matcher(el: XmlElement, idText: (fileId: number) => string): Matcher {
  if (el.ns !== NS.dav) throw new BadSearch(`unsupported operator ${clark(el)}`);
  switch (el.local) {
    case 'and':
    case 'or': {
      const parts = el.children.map((c) => matcher(c, idText));
      return el.local === 'and' ? (n) => parts.every((m) => m(n)) : (n) => parts.some((m) => m(n));
    }
    case 'not': {
      const [inner] = el.children.map((c) => matcher(c, idText));
      if (inner === undefined) throw new BadSearch('not without an operand');
      return (n) => !inner(n);
    }
    case 'is-collection':
      return (n) => n.kind === 'folder';
    case 'like': {
      const prop = propOf(el);
      const pattern = literalOf(el);
      if (prop === dav('displayname')) return (n) => sqliteLike(pattern, n.name);
      if (prop === dav('getcontenttype'))
        return (n) =>
          sqliteLike(pattern, n.kind === 'folder' ? 'httpd/unix-directory' : mimeOf(n.name));
      throw new BadSearch(`${prop} cannot be searched with like`);
    }
    case 'eq': {
      const prop = propOf(el);
      const value = literalOf(el);
      if (prop === oc('fileid')) return (n) => idText(n.fileId) === value;
      if (prop === dav('displayname')) return (n) => n.name === value;
      throw new BadSearch(`${prop} cannot be searched with eq`);
    }
    default:
      throw new BadSearch(`unsupported operator ${clark(el)}`);
  }
}

function orderOf(ctx: DavContext, el: XmlElement): Order {
  const prop = propOf(el);
  const descending = child(el, NS.dav, 'descending') !== undefined;
  const seconds = (n: NodeInfo): number => Math.floor(n.mtimeMs / 1000);
  const keys = new Map<string, Order['key']>([
    [dav('displayname'), (n) => n.name],
    [dav('getlastmodified'), seconds],
    [oc('size'), async (n) => (n.kind === 'folder' ? ctx.state.store.treeSize(n.rel) : n.size)],
    [dav('getcontenttype'), (n) => (n.kind === 'folder' ? 'httpd/unix-directory' : mimeOf(n.name))],
    [oc('favorite'), () => 0],
  ]);
  const key = keys.get(prop);
  if (key === undefined) throw new BadSearch(`${prop} cannot be sorted on`);
  return { key, descending };
}

/** Byte order (PHP strcmp and SQLite BINARY) for strings, numeric order for numbers. */
function compare(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

async function subtree(ctx: DavContext, folder: NodeInfo): Promise<NodeInfo[]> {
  const out: NodeInfo[] = [];
  for (const c of await ctx.state.store.children(folder.rel)) {
    out.push(c);
    if (c.kind === 'folder') out.push(...(await subtree(ctx, c)));
  }
  return out;
}

/**
 * The rows in the order asked for, equal ones in file-id order. Without an order they
 * come in file-id order but the folder itself last (observed on SQLite).
 */
async function sorted(nodes: NodeInfo[], orders: Order[], folder: NodeInfo): Promise<NodeInfo[]> {
  if (orders.length === 0)
    return [...nodes].sort(
      (a, b) => Number(a === folder) - Number(b === folder) || a.fileId - b.fileId,
    );
  const keyed = await Promise.all(
    nodes.map(async (node) => ({ node, keys: await Promise.all(orders.map((o) => o.key(node))) })),
  );
  keyed.sort((a, b) => {
    for (const [i, order] of orders.entries()) {
      const c = compare(a.keys[i] as string | number, b.keys[i] as string | number);
      if (c !== 0) return order.descending ? -c : c;
    }
    return a.node.fileId - b.node.fileId;
  });
  return keyed.map((k) => k.node);
}

const NOT_A_DIRECTORY = {
  ok: false,
  status: 500,
  exception: 'InvalidArgumentException',
  message: 'Search is only supported on directories',
} as const;

type Scope =
  | { ok: true; rel: string; spelledNfc: boolean }
  | { ok: false; status: number; exception: string; message: string };

/** The scope href as Nextcloud resolves it: relative to the DAV root, never decoded. */
function resolveScope(ctx: DavContext, href: string): Scope {
  const absolute = /^https?:\/\/[^/]+(\/.*)?$/.exec(href);
  const path = absolute ? (absolute[1] ?? '/').replace(/^\/remote\.php\/dav(?=\/|$)/, '') : href;
  const [root, user, ...rest] = path.split('/').filter((s) => s !== '');
  if (root === undefined) return NOT_A_DIRECTORY;
  if (root !== 'files')
    return {
      ok: false,
      status: 404,
      exception: EX.notFound,
      message: `File not found: ${root ?? ''} in 'root'`,
    };
  if (user === undefined) return NOT_A_DIRECTORY;
  // Only the fake's own user exists: any other is unknown to it.
  if (user !== ctx.user)
    return {
      ok: false,
      status: 404,
      exception: EX.notFound,
      message: `Principal with name ${user} not found`,
    };
  for (const name of rest) {
    if (name === '.' || name === '..')
      return {
        ok: false,
        status: 400,
        exception: EX.invalidPath,
        message: 'Dot files are not allowed',
      };
    const problem = checkName(name, ctx.state.series);
    if (problem)
      return {
        ok: false,
        status: problem.status,
        exception: EX.invalidPath,
        message: problem.message,
      };
  }
  const rel = rest.map((n) => n.normalize('NFC')).join('/');
  return { ok: true, rel, spelledNfc: rel === rest.join('/') };
}

interface Parsed {
  select: string[];
  href: string;
  where: Matcher;
  orders: Order[];
  limit: number | undefined;
  offset: number;
}

function parseSearch(ctx: DavContext, body: string): Parsed {
  const root = parseXml(body);
  if (root.ns !== NS.dav || root.local !== 'searchrequest')
    throw new BadSearch(`Unexpected document type: ${clark(root)}`);
  const basic = child(root, NS.dav, 'basicsearch');
  if (basic === undefined) throw new BadSearch('no basicsearch');
  const select = (
    child(child(basic, NS.dav, 'select') ?? root, NS.dav, 'prop')?.children ?? []
  ).map(clark);
  const scope = child(child(basic, NS.dav, 'from') ?? basic, NS.dav, 'scope');
  const href = scope === undefined ? undefined : child(scope, NS.dav, 'href')?.text;
  if (href === undefined) throw new BadSearch('You need to specify a scope for the search.');
  const whereEl = child(basic, NS.dav, 'where')?.children[0];
  const idText = (id: number): string => ctx.state.store.idText(id);
  const where = whereEl === undefined ? () => true : matcher(whereEl, idText);
  const orders = (child(basic, NS.dav, 'orderby')?.children ?? [])
    .filter((o) => o.ns === NS.dav && o.local === 'order')
    .map((o) => orderOf(ctx, o));
  const limitEl = child(basic, NS.dav, 'limit');
  const nresults = limitEl === undefined ? undefined : child(limitEl, NS.dav, 'nresults')?.text;
  const first =
    limitEl === undefined ? undefined : child(limitEl, SEARCHDAV_NS, 'firstresult')?.text;
  return {
    select,
    href: href.trim(),
    where,
    orders,
    limit: nresults === undefined ? undefined : Number.parseInt(nresults, 10),
    offset: first === undefined ? 0 : Number.parseInt(first, 10) || 0,
  };
}

export async function search(ctx: DavContext): Promise<void> {
  // The SearchDAV plugin only takes XML; any other body type falls through to Sabre's 501.
  if (!/text\/xml|application\/xml/.test(header(ctx, 'Content-Type') ?? '')) {
    ctx.reply.sabre(
      501,
      EX.notImplemented,
      'There was no plugin in the system that was willing to handle this SEARCH method.',
    );
    return;
  }
  const body = await readSmallBody(ctx.req);
  let parsed: Parsed;
  try {
    if (body === undefined) throw new BadSearch('Parse error: the body is too large');
    parsed = parseSearch(ctx, body);
  } catch (e) {
    // SearchDAV answers these itself, so the request's id is shown (request-id.ts).
    if (e instanceof XmlParseError || e instanceof BadSearch) requestIdRule(ctx.res, 'always');
    if (e instanceof XmlParseError) return ctx.reply.send(400, `Parse error: ${e.message}`);
    if (!(e instanceof BadSearch)) throw e;
    // SearchDAV answers a query it cannot run with its message as a plain body.
    ctx.reply.send(400, e.message, { 'Content-Type': 'application/xml; charset="utf-8"' });
    return;
  }
  const scope = resolveScope(ctx, parsed.href);
  if (!scope.ok) return ctx.reply.sabre(scope.status, scope.exception, scope.message);
  const folder = await ctx.state.store.info(scope.rel);
  if (!folder)
    return ctx.reply.sabre(
      404,
      EX.notFound,
      `File with name ${ctx.state.series.notFoundPrefix}${scope.rel} could not be located`,
    );
  if (folder.kind !== 'folder')
    return ctx.reply.sabre(
      500,
      'InvalidArgumentException',
      'Search is only supported on directories',
    );
  // Observed: 34 matches a scope by its path as spelled, so one in NFD finds nothing.
  const matches = scope.spelledNfc || ctx.state.series.searchNfdScopeMatches;
  // The folder is a row like any other until the page is cut (see the module comment).
  const rows = matches ? [folder, ...(await subtree(ctx, folder))].filter(parsed.where) : [];
  const ordered = await sorted(rows, parsed.orders, folder);
  const { limit, offset } = parsed;
  const page =
    limit === undefined || Number.isNaN(limit)
      ? ordered.slice(offset)
      : ordered.slice(offset, offset + Math.max(limit, 0));
  const responses: string[] = [];
  for (const node of page) {
    if (node.rel === folder.rel) continue;
    responses.push(await propResponse(ctx, node, node.rel.split('/'), parsed.select));
  }
  ctx.reply.xml(207, `<d:multistatus ${ROOT_NS_ATTRS}>${responses.join('')}</d:multistatus>`, {
    'Content-Type': 'application/xml; charset="utf-8"',
  });
}
