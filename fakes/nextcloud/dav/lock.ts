/**
 * LOCK / UNLOCK through files_lock.
 * - `X-User-Lock: 1`: a user lock (200, `<d:prop>` with the nc:lock properties, no
 *   Lock-Token header); its owner keeps writing without a token.
 * - An RFC 4918 `<d:lockinfo>` body: a token lock (200, `Lock-Token` header,
 *   lockdiscovery); a missing path is created empty (201, with its OC-FileId; in a
 *   missing folder 404). A second exclusive LOCK is 423; a body-less LOCK with
 *   `If: (<token>)` refreshes it. Over the user's own user lock it answers 200 with a
 *   token but locks nothing.
 * - UNLOCK: 204; no Lock-Token header 400; a wrong token 500 with an empty body.
 * Locking and unlocking give the file a new etag (LockTable). With files_lock off both
 * methods are 501.
 */
import { randomUUID } from 'node:crypto';
import { parentRel } from '../paths.js';
import { EX } from '../reply.js';
import { requestIdRule } from '../request-id.js';
import type { NodeInfo } from '../store.js';
import type { LockRecord } from '../locks.js';
import { child, NS, parseXml, propElement, ROOT_NS_ATTRS, XmlParseError } from '../xml.js';
import { readSmallBody } from './body.js';
import { checkPreconditions } from './conditions.js';
import { header, notFound, type DavContext } from './context.js';
import { lockDiscovery, PRODUCERS, splitClark } from './props.js';
import { refusePartName } from './write-checks.js';

const LOCK_PROPS = [
  'lock',
  'lock-owner-type',
  'lock-owner',
  'lock-owner-displayname',
  'lock-owner-editor',
  'lock-time',
  'lock-timeout',
  'lock-token',
].map((l) => `{${NS.nc}}${l}`);

function notImplemented(ctx: DavContext): void {
  ctx.reply.sabre(
    501,
    EX.notImplemented,
    `There was no plugin in the system that was willing to handle this ${ctx.req.method ?? ''} method.`,
  );
}

/** `Timeout: Second-N` or `Infinite` (first of a list); 0 = infinite; undefined = bad. */
function timeoutSeconds(ctx: DavContext): number | undefined {
  const value = header(ctx, 'Timeout');
  if (value === undefined) return 0;
  const first = (value.split(',')[0] ?? '').trim();
  if (/^infinite$/i.test(first)) return 0;
  const m = /^Second-([0-9]+)$/i.exec(first);
  return m ? Number(m[1]) : undefined;
}

async function userLockProps(ctx: DavContext, node: NodeInfo): Promise<string> {
  const props: string[] = [];
  for (const clark of LOCK_PROPS) {
    const [ns, local] = splitClark(clark);
    const value = await PRODUCERS.get(clark)?.(ctx, node);
    props.push(propElement(ns, local, value ?? null));
  }
  return `<d:prop ${ROOT_NS_ATTRS}>${props.join('')}</d:prop>`;
}

function nowSeconds(ctx: DavContext): number {
  return Math.floor(ctx.state.now() / 1000);
}

async function userLock(ctx: DavContext, node: NodeInfo): Promise<void> {
  const existing = ctx.state.locks.get(node.fileId);
  if (existing && !(existing.type === 'user' && existing.owner === ctx.user)) {
    ctx.reply.sabre(423, EX.fileLocked, `"${node.name}" is locked`);
    return;
  }
  if (!existing) {
    ctx.state.locks.set({
      type: 'user',
      owner: ctx.user,
      token: `files_lock/${randomUUID()}`,
      fileId: node.fileId,
      createdAt: nowSeconds(ctx),
      timeoutSeconds: 0,
      depth: '0',
      ownerText: '',
      ownerIsHref: false,
    });
  }
  ctx.reply.xml(200, await userLockProps(ctx, node));
}

function discoveryBody(ctx: DavContext, node: NodeInfo, lock: LockRecord): string {
  return `<d:prop ${ROOT_NS_ATTRS}><d:lockdiscovery>${lockDiscovery(ctx, node, lock)}</d:lockdiscovery></d:prop>`;
}

type LockInfo = { ownerText: string; ownerIsHref: boolean } | undefined;

function parseLockInfo(body: string): LockInfo {
  try {
    const root = parseXml(body);
    if (root.ns !== NS.dav || root.local !== 'lockinfo' || !child(root, NS.dav, 'lockscope')) {
      return undefined;
    }
    const owner = child(root, NS.dav, 'owner');
    const href = owner ? child(owner, NS.dav, 'href') : undefined;
    return { ownerText: (href ?? owner)?.text.trim() ?? '', ownerIsHref: href !== undefined };
  } catch (e) {
    if (e instanceof XmlParseError) return undefined;
    throw e;
  }
}

function tokenLock(
  ctx: DavContext,
  node: NodeInfo,
  timeout: number,
  info: NonNullable<LockInfo>,
  depthHeader: string | undefined,
): LockRecord {
  return {
    type: 'token',
    owner: ctx.user,
    token: `opaquelocktoken:${randomUUID()}`,
    fileId: node.fileId,
    createdAt: nowSeconds(ctx),
    timeoutSeconds: timeout,
    depth: (depthHeader ?? 'infinity').trim() === '0' ? '0' : 'infinity',
    ownerText: info.ownerText,
    ownerIsHref: info.ownerIsHref,
  };
}

export async function lock(ctx: DavContext): Promise<void> {
  if (!ctx.state.faults.filesLock) return notImplemented(ctx);
  const store = ctx.state.store;
  const { rel } = ctx.target;
  const body = await readSmallBody(ctx.req);
  let node = await store.info(rel);
  const tokens = await checkPreconditions(ctx, node);
  if (!tokens) return;
  if (header(ctx, 'X-User-Lock') === '1') {
    if (!node) return notFound(ctx);
    return userLock(ctx, node);
  }
  const timeout = timeoutSeconds(ctx);
  if (timeout === undefined) {
    ctx.reply.sabre(400, EX.badRequest, 'Invalid HTTP timeout header');
    return;
  }
  if (body === undefined || body.trim() === '') {
    // A refresh: the If header must name the lock on this resource.
    const existing = node ? ctx.state.locks.get(node.fileId) : undefined;
    if (!node || !existing || existing.type !== 'token' || !tokens.has(existing.token)) {
      ctx.reply.sabre(400, EX.badRequest, 'An xml body is required for lock requests');
      return;
    }
    existing.timeoutSeconds = timeout;
    ctx.reply.xml(200, discoveryBody(ctx, node, existing), { 'Lock-Token': `<${existing.token}>` });
    return;
  }
  const info = parseLockInfo(body);
  if (!info) {
    ctx.reply.sabre(400, EX.badRequest, 'The request body had an invalid XML body.');
    return;
  }
  const existing = node ? ctx.state.locks.get(node.fileId) : undefined;
  if (existing && node && existing.type === 'user' && existing.owner === ctx.user) {
    // Observed: over the user's own user lock, a token LOCK answers 200 with a fresh
    // token and a full lockdiscovery, but no lock is made (the user lock stays, the
    // etag does not change, the token holds nothing).
    const phantom = tokenLock(ctx, node, timeout, info, header(ctx, 'Depth'));
    ctx.reply.xml(200, discoveryBody(ctx, node, phantom), { 'Lock-Token': `<${phantom.token}>` });
    return;
  }
  if (existing) {
    ctx.reply.sabre(423, EX.conflictingLock, '', {}, '  <d:no-conflicting-lock/>\n');
    return;
  }
  let created = false;
  if (!node) {
    // Observed: an RFC LOCK on a missing path creates an empty file.
    // Observed: in a missing folder this is 404, not 409.
    const parent = await store.info(parentRel(rel));
    if (!parent || parent.kind !== 'folder') return notFound(ctx, parentRel(rel));
    if (refusePartName(ctx.reply, ctx.state.series, rel)) return;
    await store.writeBuffer(rel, Buffer.alloc(0));
    node = await store.info(rel);
    if (!node) throw new Error(`fake nextcloud: ${rel} vanished after LOCK`);
    created = true;
  }
  const record = tokenLock(ctx, node, timeout, info, header(ctx, 'Depth'));
  ctx.state.locks.set(record);
  ctx.reply.xml(created ? 201 : 200, discoveryBody(ctx, node, record), {
    'Lock-Token': `<${record.token}>`,
    ...(created ? { 'OC-FileId': store.ocId(node.fileId) } : {}),
  });
}

export async function unlock(ctx: DavContext): Promise<void> {
  if (!ctx.state.faults.filesLock) return notImplemented(ctx);
  const node = await ctx.state.store.info(ctx.target.rel);
  if (!node) return notFound(ctx);
  const existing = ctx.state.locks.get(node.fileId);
  if (header(ctx, 'X-User-Lock') === '1') {
    if (existing && !(existing.type === 'user' && existing.owner === ctx.user)) {
      ctx.reply.sabre(423, EX.fileLocked, `"${node.name}" is locked`);
      return;
    }
    ctx.state.locks.delete(node.fileId);
    ctx.reply.xml(200, await userLockProps(ctx, node));
    return;
  }
  const value = header(ctx, 'Lock-Token');
  if (!value) {
    ctx.reply.sabre(400, EX.badRequest, 'No lock token was supplied');
    return;
  }
  // Sabre accepts the token with or without angle brackets.
  const token = value.trim().replace(/^<(.*)>$/, '$1');
  if (!existing || existing.type !== 'token' || existing.token !== token) {
    // Observed: files_lock answers a wrong token with a bare 500 of its own (so the
    // request's id is shown, as after any method that ran to its end).
    requestIdRule(ctx.res, 'always');
    ctx.reply.empty(500);
    return;
  }
  ctx.state.locks.delete(node.fileId);
  ctx.reply.empty(204);
}
