/**
 * WebDAV properties of a node as Nextcloud reports them (Clark notation keys).
 * A producer returns raw inner XML, '' for an empty element, or undefined when the
 * node does not have the property (it goes to the 404 propstat).
 */
import type { LockRecord } from '../locks.js';
import type { NodeInfo } from '../store.js';
import { escapeXml, NS } from '../xml.js';
import { hrefOf, type DavContext } from './context.js';
import { quotaShown } from './quota.js';

type Producer = (
  ctx: DavContext,
  node: NodeInfo,
) => Promise<string | undefined> | string | undefined;

const MIME = new Map([
  ['txt', 'text/plain'],
  ['md', 'text/markdown'],
  ['csv', 'text/csv'],
  ['html', 'text/html'],
  ['htm', 'text/html'],
  ['sh', 'text/x-shellscript'],
  ['js', 'application/javascript'],
  ['yaml', 'application/yaml'],
  ['yml', 'application/yaml'],
  ['bin', 'application/x-bin'],
  ['gz', 'application/gzip'],
  ['mp4', 'video/mp4'],
  ['json', 'application/json'],
  ['xml', 'application/xml'],
  ['pdf', 'application/pdf'],
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['gif', 'image/gif'],
  ['svg', 'image/svg+xml'],
  ['zip', 'application/zip'],
  ['odt', 'application/vnd.oasis.opendocument.text'],
  ['ods', 'application/vnd.oasis.opendocument.spreadsheet'],
  ['docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
]);

export function mimeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 && MIME.get(name.slice(dot + 1).toLowerCase())) || 'application/octet-stream';
}

export function httpDate(mtimeMs: number): string {
  return new Date(Math.floor(mtimeMs / 1000) * 1000).toUTCString();
}

const file = (v: (n: NodeInfo) => string) => (_: DavContext, n: NodeInfo) =>
  n.kind === 'file' ? v(n) : undefined;
const folder =
  (v: (ctx: DavContext, n: NodeInfo) => Promise<string>) => (ctx: DavContext, n: NodeInfo) =>
    n.kind === 'folder' ? v(ctx, n) : undefined;

function activeLock(ctx: DavContext, node: NodeInfo, lock: LockRecord): string {
  const href = hrefOf(ctx.base, node.rel === '' ? [] : node.rel.split('/'), node.kind === 'folder');
  const owner = lock.ownerIsHref
    ? `<d:owner><d:href>${escapeXml(lock.ownerText)}</d:href></d:owner>`
    : lock.ownerText === ''
      ? ''
      : `<d:owner>${escapeXml(lock.ownerText)}</d:owner>`;
  return (
    '<d:activelock><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype>' +
    `<d:lockroot><d:href>${href}</d:href></d:lockroot><d:depth>${lock.depth}</d:depth>` +
    `<d:timeout>${lock.timeoutSeconds === 0 ? 'Infinite' : `Second-${lock.timeoutSeconds}`}</d:timeout>` +
    `<d:locktoken><d:href>${escapeXml(lock.token)}</d:href></d:locktoken>${owner}</d:activelock>`
  );
}

export function lockDiscovery(
  ctx: DavContext,
  node: NodeInfo,
  lock: LockRecord | undefined,
): string {
  return lock && lock.type === 'token' ? activeLock(ctx, node, lock) : '';
}

function currentLock(ctx: DavContext, node: NodeInfo): LockRecord | undefined {
  return ctx.state.faults.filesLock ? ctx.state.locks.get(node.fileId) : undefined;
}

const lockProp =
  (v: (l: LockRecord, ctx: DavContext) => string) => (ctx: DavContext, n: NodeInfo) => {
    const lock = currentLock(ctx, n);
    return lock ? escapeXml(v(lock, ctx)) : undefined;
  };

const dav = (local: string) => `{${NS.dav}}${local}`;
const oc = (local: string) => `{${NS.oc}}${local}`;
const nc = (local: string) => `{${NS.nc}}${local}`;

export const PRODUCERS = new Map<string, Producer>([
  [dav('getlastmodified'), (_, n) => httpDate(n.mtimeMs)],
  [dav('getcontentlength'), file((n) => String(n.size))],
  [dav('resourcetype'), (_, n) => (n.kind === 'folder' ? '<d:collection/>' : '')],
  // Observed: the folder's size and its owner's free space, cached five minutes (quota.ts).
  [dav('quota-used-bytes'), folder(async (ctx, n) => (await quotaShown(ctx.state, n)).used)],
  [
    dav('quota-available-bytes'),
    folder(async (ctx, n) => (await quotaShown(ctx.state, n)).available),
  ],
  [dav('getetag'), (_, n) => escapeXml(`"${n.etag}"`)],
  [dav('getcontenttype'), file((n) => escapeXml(mimeOf(n.name)))],
  [dav('displayname'), (ctx, n) => escapeXml(n.rel === '' ? ctx.user : n.name)],
  [
    dav('lockdiscovery'),
    (ctx, n) =>
      ctx.state.faults.filesLock ? lockDiscovery(ctx, n, currentLock(ctx, n)) : undefined,
  ],
  [
    dav('supportedlock'),
    (ctx) =>
      ctx.state.faults.filesLock
        ? '<d:lockentry><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype></d:lockentry>' +
          '<d:lockentry><d:lockscope><d:shared/></d:lockscope><d:locktype><d:write/></d:locktype></d:lockentry>'
        : undefined,
  ],
  [oc('fileid'), (ctx, n) => ctx.state.store.idText(n.fileId)],
  [oc('id'), (ctx, n) => ctx.state.store.ocId(n.fileId)],
  // Observed: `S` (shared with this user) leads the letters of everything in a received share.
  [
    oc('permissions'),
    (ctx, n) =>
      (ctx.state.shares.containing(n.rel) === undefined ? '' : 'S') +
      (n.kind === 'folder' ? 'RGDNVCK' : 'RGDNVW'),
  ],
  [
    oc('size'),
    async (ctx, n) => String(n.kind === 'folder' ? await ctx.state.store.treeSize(n.rel) : n.size),
  ],
  [oc('favorite'), () => '0'],
  [oc('owner-id'), (ctx, n) => escapeXml(ctx.state.shares.containing(n.rel)?.owner ?? ctx.user)],
  [oc('owner-display-name'), (ctx) => escapeXml(ctx.user)],
  [oc('share-types'), () => ''],
  [nc('has-preview'), () => 'false'],
  [
    nc('mount-type'),
    (ctx, n) => (ctx.state.shares.containing(n.rel) === undefined ? '' : 'shared'),
  ],
  [
    nc('is-mount-root'),
    (ctx, n) => (ctx.state.shares.rootOf(n.fileId) === undefined ? 'false' : 'true'),
  ],
  [nc('is-encrypted'), () => '0'],
  [nc('lock'), lockProp(() => '1')],
  [nc('lock-owner-type'), lockProp((l) => (l.type === 'token' ? '2' : '0'))],
  [nc('lock-owner'), lockProp((l) => l.owner)],
  // Observed: for a token lock, the `<d:owner>` text of its LOCK body.
  [nc('lock-owner-displayname'), lockProp((l) => (l.type === 'token' ? l.ownerText : l.owner))],
  [nc('lock-owner-editor'), lockProp(() => '')],
  [nc('lock-time'), lockProp((l) => String(l.createdAt))],
  [
    nc('lock-timeout'),
    // Observed: 34 shows a user lock (no timeout) as -60, 29 as 0.
    lockProp((l, ctx) =>
      l.type === 'user' && l.timeoutSeconds === 0
        ? ctx.state.series.userLockTimeout
        : String(l.timeoutSeconds),
    ),
  ],
  // Observed: a token lock's uuid without its `opaquelocktoken:` prefix.
  [nc('lock-token'), lockProp((l) => l.token.replace(/^opaquelocktoken:/, ''))],
]);

/** Sabre's allprop set; properties a node lacks are left out (no 404 propstat). */
export const ALLPROP = [
  dav('getlastmodified'),
  dav('getcontentlength'),
  dav('resourcetype'),
  dav('quota-used-bytes'),
  dav('quota-available-bytes'),
  dav('getetag'),
  dav('getcontenttype'),
];

/** `{ns}local` → [ns, local]. */
export function splitClark(clark: string): [string, string] {
  const close = clark.indexOf('}');
  return [clark.slice(1, close), clark.slice(close + 1)];
}
