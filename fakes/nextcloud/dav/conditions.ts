/**
 * Preconditions Sabre checks before a method runs: the `If` header (lock tokens and
 * etags), If-Match / If-None-Match / If-(Un)Modified-Since; and the files_lock
 * rule for writes (a token lock needs its token even from its own user, a user
 * lock blocks other users).
 */
import { decodeSegment, parentRel } from '../paths.js';
import { EX } from '../reply.js';
import type { NodeInfo } from '../store.js';
import { parseIfHeader, type IfList } from '../locks.js';
import { header, hrefOf, type DavContext } from './context.js';

/** Tokens of the `If` lists that held: the lock tokens this request submitted. */
export type SubmittedTokens = ReadonlySet<string>;

function quoted(etag: string): string {
  return `"${etag}"`;
}

function etagListMatches(list: string, node: NodeInfo): boolean {
  return list
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === quoted(node.etag));
}

/**
 * If-None-Match on a GET, as observed: `*` holds for anything that exists (304 without
 * an ETag); otherwise a listed etag, compared exactly (`W/"x"` and a bare `x` do not
 * match), holds only for a file's own etag (304 with it). A folder's etag never does:
 * its GET stays the 200 banner.
 */
function readIfNoneMatch(list: string, node: NodeInfo): 'star' | 'etag' | 'none' {
  if (list.trim() === '*') return 'star';
  if (node.kind !== 'file') return 'none';
  return list.split(',').some((t) => t.trim() === quoted(node.etag)) ? 'etag' : 'none';
}

/** The rel a tagged `If` resource names, if it is inside this user's files. */
export function taggedRel(ctx: DavContext, uri: string): string | undefined {
  let pathname: string;
  try {
    pathname = new URL(uri, 'http://fake.invalid').pathname;
  } catch {
    return undefined;
  }
  const prefix = ctx.base + '/';
  if (pathname === ctx.base) return '';
  if (!pathname.startsWith(prefix)) return undefined;
  return pathname
    .slice(prefix.length)
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeSegment(s).normalize('NFC'))
    .join('/');
}

/** Locks on rel or on a folder above it: what a submitted token may refer to. */
export async function locksCovering(ctx: DavContext, rel: string): Promise<string[]> {
  if (!ctx.state.faults.filesLock) return [];
  const chain = [rel];
  for (let r = rel; r !== '';) {
    r = parentRel(r);
    chain.push(r);
  }
  const tokens: string[] = [];
  for (const r of chain) {
    const info = await ctx.state.store.info(r);
    const lock = info ? ctx.state.locks.get(info.fileId) : undefined;
    if (lock && (r === rel || lock.depth === 'infinity')) tokens.push(lock.token);
  }
  return tokens;
}

/**
 * Run Sabre's precondition checks for `node` (undefined = missing). Answers and
 * returns undefined when a check fails; otherwise the submitted lock tokens.
 */
export async function checkPreconditions(
  ctx: DavContext,
  node: NodeInfo | undefined,
): Promise<SubmittedTokens | undefined> {
  const tokens = new Set<string>();
  const ifHeader = header(ctx, 'If');
  if (ifHeader !== undefined) {
    const lists = parseIfHeader(ifHeader);
    if (!lists) {
      ctx.reply.sabre(400, EX.badRequest, 'The If header could not be parsed');
      return undefined;
    }
    let anyHeld = false;
    for (const list of lists) {
      const rel = list.resource === undefined ? ctx.target.rel : taggedRel(ctx, list.resource);
      const resource = rel === undefined ? undefined : await ctx.state.store.info(rel);
      const held = rel === undefined ? [] : await locksCovering(ctx, rel);
      const ok = list.conditions.every((c) => {
        const match =
          c.kind === 'token'
            ? held.includes(c.value)
            : // Sabre skips an empty etag (`[]`): it is no condition at all.
              c.value === '' ||
              (resource !== undefined && c.value.replace(/^W\//, '') === quoted(resource.etag));
        return c.not ? !match : match;
      });
      if (ok) {
        anyHeld = true;
        for (const c of list.conditions) if (c.kind === 'token' && !c.not) tokens.add(c.value);
      }
    }
    if (!anyHeld) {
      ifNotHeld(ctx, node, lists, ctx.target.rel);
      return undefined;
    }
  }
  const method = ctx.req.method ?? '';
  const readOnly = method === 'GET' || method === 'HEAD';
  const ifMatch = header(ctx, 'If-Match');
  if (ifMatch !== undefined) {
    if (!node) {
      ctx.reply.sabre(
        412,
        EX.preconditionFailed,
        'An If-Match header was specified and the resource did not exist',
      );
      return undefined;
    }
    if (!etagListMatches(ifMatch, node)) {
      ctx.reply.sabre(
        412,
        EX.preconditionFailed,
        'An If-Match header was specified, but none of the specified ETags matched.',
        // Observed: the current ETag comes back for a file, not for a folder.
        node.kind === 'file' ? { ETag: quoted(node.etag) } : {},
      );
      return undefined;
    }
  }
  const ifNoneMatch = header(ctx, 'If-None-Match');
  if (readOnly && ifNoneMatch !== undefined && node) {
    const held = readIfNoneMatch(ifNoneMatch, node);
    if (held !== 'none') {
      ctx.reply.empty(304, held === 'etag' ? { ETag: quoted(node.etag) } : {});
      return undefined;
    }
  } else if (ifNoneMatch !== undefined && node && etagListMatches(ifNoneMatch, node)) {
    ctx.reply.sabre(
      412,
      EX.preconditionFailed,
      'An If-None-Match header was specified, but the ETag matched (or * was specified).',
    );
    return undefined;
  }
  const mtime = node ? Math.floor(node.mtimeMs / 1000) * 1000 : undefined;
  const ifModifiedSince = header(ctx, 'If-Modified-Since');
  if (readOnly && ifNoneMatch === undefined && ifModifiedSince && mtime !== undefined && node) {
    const since = Date.parse(ifModifiedSince);
    if (!Number.isNaN(since) && mtime <= since) {
      ctx.reply.empty(304, {
        ETag: quoted(node.etag),
        'Last-Modified': new Date(mtime).toUTCString(),
      });
      return undefined;
    }
  }
  const ifUnmodifiedSince = header(ctx, 'If-Unmodified-Since');
  if (ifUnmodifiedSince && mtime !== undefined) {
    const since = Date.parse(ifUnmodifiedSince);
    if (!Number.isNaN(since) && mtime > since) {
      ctx.reply.sabre(
        412,
        EX.preconditionFailed,
        'An If-Unmodified-Since header was specified, but the entity has been changed since the specified date.',
      );
      return undefined;
    }
  }
  return tokens;
}

/**
 * Answers an `If` header none of whose lists held, about `node`. Observed: on a file
 * someone has token-locked that is 423 (the file is locked) when the header does not
 * name the lock's token, and 412 when it does (the token is right, an etag next to it
 * is not); otherwise 412.
 */
export function ifNotHeld(
  ctx: DavContext,
  node: NodeInfo | undefined,
  lists: readonly IfList[],
  named: string,
): void {
  const lock = node && ctx.state.faults.filesLock ? ctx.state.locks.get(node.fileId) : undefined;
  const submitted = lists.some((l) => l.conditions.some((c) => c.value === lock?.token));
  if (node && lock?.type === 'token' && !submitted) return lockedReply(ctx, node);
  ctx.reply.sabre(
    412,
    EX.preconditionFailed,
    `Failed to find a valid token/etag combination for ${named}`,
  );
}

/**
 * files_lock: may this request change `node`? Answers 423 and returns false if not.
 * A token lock needs its token (from any user); a user lock blocks everyone but its owner.
 */
export function mayWrite(ctx: DavContext, node: NodeInfo, tokens: SubmittedTokens): boolean {
  if (!ctx.state.faults.filesLock) return true;
  const lock = ctx.state.locks.get(node.fileId);
  if (!lock) return true;
  if (lock.type === 'token') {
    if (tokens.has(lock.token)) return true;
    lockedReply(ctx, node);
    return false;
  }
  if (lock.owner === ctx.user) return true;
  ctx.reply.sabre(423, EX.fileLocked, `"${node.name}" is locked`);
  return false;
}

/**
 * Sabre's 423 for a token-locked node, naming the resource whose token was missing
 * (observed: relative to the DAV root, `files/<user>/<path>`).
 */
export function lockedReply(ctx: DavContext, node: NodeInfo): void {
  const href = hrefOf(
    ctx.base,
    node.rel === '' ? [] : node.rel.split('/'),
    node.kind === 'folder',
  ).replace(/^\/remote\.php\/dav\//, '');
  ctx.reply.sabre(
    423,
    EX.locked,
    '',
    {},
    `  <d:lock-token-submitted>\n    <d:href>${href}</d:href>\n  </d:lock-token-submitted>\n`,
  );
}
