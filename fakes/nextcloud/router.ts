/**
 * One request through the layers of the real stack: faults, Apache (URL rules),
 * the brute-force throttle, authentication, then WebDAV / trashbin / OCS.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkBasic, recordFailure, throttled, WWW_AUTHENTICATE } from './auth.js';
import { davBase, type DavContext } from './dav/context.js';
import { del } from './dav/delete.js';
import { get } from './dav/get.js';
import { groupware } from './dav/groupware.js';
import { lock, unlock } from './dav/lock.js';
import { mkcol } from './dav/mkcol.js';
import { moveOrCopy } from './dav/move.js';
import { propfind } from './dav/propfind.js';
import { put } from './dav/put.js';
import { search } from './dav/search.js';
import { trashbin } from './dav/trashbin.js';
import { uploads } from './dav/uploads.js';
import { versions } from './dav/versions.js';
import { ocs, ocsUnauthorised } from './ocs.js';
import { asksForJson } from './ocs-reply.js';
import { apacheParse, checkName, decodeSegment, toUserPath } from './paths.js';
import { EX, Reply } from './reply.js';
import { requestIdRule } from './request-id.js';
import type { FakeState } from './state.js';
import { versionOf } from './series.js';

const FAULT_EXCEPTIONS = new Map<number, [string, string]>([
  [401, [EX.notAuthenticated, 'No public access to this resource.']],
  [403, [EX.forbidden, 'Forbidden']],
  [404, [EX.notFound, 'Not found']],
  [423, [EX.fileLocked, 'File is locked']],
  [429, [EX.maxDelay, 'Reached maximum delay']],
  [503, [EX.serviceUnavailable, 'System in maintenance mode.']],
  [507, [EX.insufficientStorage, 'Insufficient space in target storage']],
]);

function faultReply(reply: Reply, status: number): void {
  const [exception, message] = FAULT_EXCEPTIONS.get(status) ?? [EX.generic, 'Internal error'];
  const headers: Record<string, string> = {};
  if (status === 401) headers['WWW-Authenticate'] = WWW_AUTHENTICATE;
  if (status === 503 || status === 429) headers['Retry-After'] = '1';
  reply.sabre(status, exception, message, headers);
}

function davOptions(ctx: DavContext): void {
  const lockable = ctx.state.faults.filesLock;
  ctx.reply.empty(200, {
    DAV: `1, 3, extended-mkcol${lockable ? ', 2' : ''}`,
    'MS-Author-Via': 'DAV',
    'Accept-Ranges': 'bytes',
    Allow:
      'OPTIONS, GET, HEAD, DELETE, PROPFIND, PUT, PROPPATCH, COPY, MOVE, REPORT' +
      (lockable ? ', LOCK, UNLOCK' : ''),
  });
}

async function dav(ctx: DavContext): Promise<void> {
  switch (ctx.req.method) {
    case 'OPTIONS':
      return davOptions(ctx);
    case 'PROPFIND':
      return propfind(ctx);
    case 'GET':
    case 'HEAD':
      return get(ctx);
    case 'PUT':
      return put(ctx);
    case 'MKCOL':
      return mkcol(ctx);
    case 'MOVE':
    case 'COPY':
      return moveOrCopy(ctx, ctx.req.method);
    case 'DELETE':
      return del(ctx);
    case 'LOCK':
      return lock(ctx);
    case 'UNLOCK':
      return unlock(ctx);
    default:
      ctx.reply.sabre(
        501,
        EX.notImplemented,
        `There was no plugin in the system that was willing to handle this ${ctx.req.method ?? ''} method.`,
      );
  }
}

type Auth = { user: string | undefined } | 'answered';

/** Basic auth; a wrong password counts toward the throttle. Undefined user = no credentials. */
async function authenticate(state: FakeState, reply: Reply, ocsRoute: boolean): Promise<Auth> {
  const result = checkBasic(reply.req, state);
  if (result.kind === 'ok') {
    state.adminAudit.loggedIn(result.user);
    return { user: result.user };
  }
  if (result.kind === 'bad') await recordFailure(state);
  if (result.kind === 'none' && ocsRoute) return { user: undefined };
  if (ocsRoute) {
    ocsUnauthorised(reply, state.series.ocsUnauthorisedAsked && asksForJson(reply.req));
    return 'answered';
  }
  reply.sabre(
    401,
    EX.notAuthenticated,
    result.kind === 'none'
      ? "No public access to this resource., No 'Authorization: Basic' header found. Either the client didn't send one, or the server is misconfigured"
      : 'Username or password was incorrect',
    { 'WWW-Authenticate': WWW_AUTHENTICATE },
  );
  return 'answered';
}

export async function route(
  state: FakeState,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const reply = new Reply(req, res, state);
  if (state.faults.status !== null) return faultReply(reply, state.faults.status);
  const limit = state.faults.putBodyLimit;
  if (limit !== null && req.method === 'PUT' && Number(req.headers['content-length']) > limit)
    return reply.apache(413);
  const parsed = apacheParse(req.url ?? '/');
  if (!parsed.ok) return reply.apache(parsed.status);
  // Security (of the real server, mirrored): the throttle covers the whole client IP.
  if (throttled(state)) {
    reply.sabre(429, EX.maxDelay, 'Reached maximum delay', { 'Retry-After': '1' });
    return;
  }
  const [s0, s1, s2, s3, ...rest] = parsed.segments;
  if (s0 === 'status.php' && s1 === undefined) {
    reply.json(200, {
      installed: true,
      maintenance: false,
      needsDbUpgrade: false,
      version: `${versionOf(state.series)}.1`,
      versionstring: versionOf(state.series),
      edition: '',
      productname: 'Nextcloud',
      extendedSupport: false,
    });
    return;
  }
  if (s0 === 'ocs' && s1 === 'v2.php') {
    requestIdRule(res, state.series.ocsRefusalsRequestId ? 'always' : 'never');
    const auth = await authenticate(state, reply, true);
    if (auth === 'answered') return;
    const segments = parsed.segments.slice(2).map(decodeSegment);
    return ocs({ state, reply, req, query: parsed.query, segments, user: auth.user });
  }
  if (s0 === 'remote.php' && s1 === 'dav' && s2 === undefined && req.method === 'SEARCH') {
    // The DAV root takes SEARCH (the scope names the user's folder); see dav/search.ts.
    const auth = await authenticate(state, reply, false);
    if (auth === 'answered' || auth.user === undefined) return;
    requestIdRule(res, 'on-success');
    const target = toUserPath([]);
    return search({ state, reply, req, res, user: auth.user, target, base: davBase(auth.user) });
  }
  if (s0 === 'remote.php' && s1 === 'dav' && (s2 === 'calendars' || s2 === 'addressbooks')) {
    const auth = await authenticate(state, reply, false);
    if (auth === 'answered' || auth.user === undefined) return;
    requestIdRule(res, 'on-success');
    // Address book homes sit one level deeper: addressbooks/users/<user>/.
    const [owner, ...below] = (s2 === 'calendars' ? [s3, ...rest] : s3 === 'users' ? rest : [])
      .filter((s): s is string => s !== undefined && s !== '')
      .map(decodeSegment);
    if (owner !== auth.user) {
      reply.sabre(404, EX.notFound, `Principal with name ${owner ?? ''} not found`);
      return;
    }
    const kind = s2 === 'calendars' ? 'calendar' : 'addressbook';
    return groupware({ state, reply, req, user: auth.user, kind, segments: below });
  }
  if (
    s0 !== 'remote.php' ||
    s1 !== 'dav' ||
    !['files', 'trashbin', 'uploads', 'versions'].includes(s2 ?? '') ||
    s3 === undefined
  ) {
    return reply.apache(404);
  }
  const auth = await authenticate(state, reply, false);
  if (auth === 'answered' || auth.user === undefined) return;
  requestIdRule(res, 'on-success');
  const user = auth.user;
  // Observed (29, 34): without files_versions the collection does not exist.
  if (s2 === 'versions' && !state.faults.versions)
    return reply.sabre(404, EX.notFound, "File not found: versions in 'root'");
  if (s2 === 'versions')
    return versions({ state, reply, req, res, user, segments: [s3, ...rest].map(decodeSegment) });
  if (s2 === 'uploads') {
    // Observed: the user segment is not checked; it is always the caller's own folder.
    const [id, name, ...deeper] = rest.map(decodeSegment);
    for (const part of [id, name]) {
      const problem = part === undefined ? undefined : checkName(part, state.series, req.method);
      if (problem) return reply.sabre(problem.status, problem.exception, problem.message);
    }
    return uploads(
      { state, reply, req, res, user, target: toUserPath([]), base: davBase(user) },
      { id, name, deeper: deeper.length > 0 },
    );
  }
  if (decodeSegment(s3) !== user) {
    reply.sabre(404, EX.notFound, `Principal with name ${decodeSegment(s3)} not found`);
    return;
  }
  const decoded = rest.map(decodeSegment);
  for (const name of decoded) {
    const problem = checkName(name, state.series, req.method);
    if (problem) return reply.sabre(problem.status, problem.exception, problem.message);
  }
  if (s2 === 'trashbin') {
    return trashbin({ state, reply, req, res, user, segments: decoded });
  }
  return dav({ state, reply, req, res, user, target: toUserPath(decoded), base: davBase(user) });
}
