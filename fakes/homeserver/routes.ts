/**
 * The Client-Server API subset of the fake homeserver: what matrix-js-sdk@43 needs to
 * start, sync and act as a bot.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MatrixEvent } from './model.js';
import { buildSync, hasNews, parseSyncToken, parseToken, timelineLimit } from './sync.js';
import type { SyncFilter } from './sync.js';

import {
  body,
  HttpError,
  me,
  route,
  routes,
  match,
  type FakeUser,
  type Handler,
  type RecordedRequest,
  type Request,
  type RouteContext,
} from './http.js';
import { keyCounts } from './e2ee-routes.js';

export type { FakeUser, RecordedRequest, RouteContext };

const EMPTY_PUSH_RULES = {
  global: { override: [], content: [], room: [], sender: [], underride: [] },
};

function requireRoom(ctx: RouteContext, roomId: string): void {
  if (!ctx.model.hasRoom(roomId)) throw new HttpError(404, 'M_NOT_FOUND', 'Unknown room');
}

function requireJoined(ctx: RouteContext, roomId: string, userId: string): void {
  requireRoom(ctx, roomId);
  if (ctx.model.membership(roomId, userId) !== 'join') {
    throw new HttpError(403, 'M_FORBIDDEN', `User ${userId} not in room ${roomId}`);
  }
}

function relatesTo(event: MatrixEvent): Record<string, unknown> | undefined {
  const rel = event.content['m.relates_to'];
  return typeof rel === 'object' && rel !== null ? (rel as Record<string, unknown>) : undefined;
}

// --- unauthenticated --------------------------------------------------------------

route(
  'GET',
  '_matrix/client/versions',
  () => [200, { versions: ['v1.1', 'v1.5', 'v1.9', 'v1.11'], unstable_features: {} }],
  false,
);
route(
  'GET',
  '_matrix/client/v3/login',
  () => [200, { flows: [{ type: 'm.login.password' }] }],
  false,
);
route(
  'POST',
  '_matrix/client/v3/login',
  (ctx, req) => {
    const b = body(req);
    const identifier = b['identifier'] as Record<string, unknown> | undefined;
    const name = (identifier?.['user'] ?? b['user']) as unknown;
    const user = [...ctx.users.values()].find(
      (u) => u.userId === name || u.userId.slice(1).split(':')[0] === name,
    );
    if (b['type'] !== 'm.login.password' || !user || b['password'] !== user.password) {
      throw new HttpError(403, 'M_FORBIDDEN', 'Invalid username or password');
    }
    // Each login is a new session (device and access token) unless it names a device.
    const deviceId = typeof b['device_id'] === 'string' ? b['device_id'] : undefined;
    const display = b['initial_device_display_name'];
    const session = ctx.e2ee.createSession(user.userId, {
      deviceId,
      ...(typeof display === 'string' ? { displayName: display } : {}),
    });
    return [
      200,
      { user_id: user.userId, access_token: session.token, device_id: session.deviceId },
    ];
  },
  false,
);

// --- account ---------------------------------------------------------------------

route('GET', '_matrix/client/v3/account/whoami', (_ctx, req) => {
  const u = me(req);
  return [200, { user_id: u.userId, device_id: u.deviceId, is_guest: false }];
});
route('GET', '_matrix/client/v3/capabilities', () => [
  200,
  {
    capabilities: {
      'm.change_password': { enabled: false },
      'm.room_versions': { default: '10', available: { '10': 'stable' } },
    },
  },
]);
route('GET', '_matrix/client/v3/pushrules', () => [200, EMPTY_PUSH_RULES]);
route('GET', '_matrix/client/v3/pushrules/', () => [200, EMPTY_PUSH_RULES]);
route('POST', '_matrix/client/v3/user/*/filter', (ctx, req, [userId]) => {
  if (userId !== me(req).userId) throw new HttpError(403, 'M_FORBIDDEN', 'Not your filter');
  const id = String(ctx.filters.size + 1);
  ctx.filters.set(`${userId}\u0000${id}`, body(req) as SyncFilter);
  return [200, { filter_id: id }];
});
route('GET', '_matrix/client/v3/user/*/filter/*', (ctx, req, [userId, id]) => {
  if (userId !== me(req).userId) throw new HttpError(403, 'M_FORBIDDEN', 'Not your filter');
  const f = ctx.filters.get(`${userId}\u0000${id}`);
  if (!f) throw new HttpError(404, 'M_NOT_FOUND', 'No such filter');
  return [200, f];
});

// --- sync ------------------------------------------------------------------------

route('GET', '_matrix/client/v3/sync', async (ctx, req) => {
  const u = me(req);
  const filterParam = req.query.get('filter') ?? undefined;
  let filter: SyncFilter | undefined;
  if (filterParam?.startsWith('{')) {
    filter = JSON.parse(filterParam) as SyncFilter;
  } else if (filterParam !== undefined) {
    filter = ctx.filters.get(`${u.userId}\u0000${filterParam}`);
    if (!filter) throw new HttpError(400, 'M_INVALID_PARAM', 'Unknown filter');
  }
  const sinceParam = req.query.get('since');
  const since = sinceParam === null ? undefined : parseSyncToken(sinceParam);
  if (sinceParam !== null && since === undefined) {
    throw new HttpError(400, 'M_INVALID_PARAM', 'Bad since token');
  }
  const timeout = Math.min(Number(req.query.get('timeout') ?? '0') || 0, 60_000);
  if (since !== undefined) {
    const deadline = ctx.now() + timeout;
    // Long-poll: hold the request until something for this user arrives.
    while (!hasNews(ctx.model, ctx.e2ee, u, since) && ctx.now() < deadline) {
      await ctx.waitForChange(deadline - ctx.now());
    }
  }
  // A held link answers nothing until it is released, however much arrives meanwhile.
  while (ctx.heldSyncs.has(u.userId)) await ctx.waitForChange(60_000);
  const limit = timelineLimit(filter);
  return [200, buildSync(ctx.model, ctx.e2ee, u, since, limit, ctx.serve, keyCounts(ctx, u))];
});

// --- rooms -----------------------------------------------------------------------

/**
 * Matrix caps an event at 65,536 bytes as the homeserver stores it (its PDU: our
 * fields plus hashes, signatures, auth and prev events), and Synapse answers 413
 * M_TOO_LARGE for a bigger one. The fake counts what the client sent plus a fixed
 * allowance for the fields a real server adds.
 */
const MAX_PDU_BYTES = 65_536;
const PDU_FIELDS_ALLOWANCE = 1_000;

function requireSmallEnough(event: Record<string, unknown>): void {
  const bytes = Buffer.byteLength(JSON.stringify(event), 'utf8') + PDU_FIELDS_ALLOWANCE;
  if (bytes > MAX_PDU_BYTES) throw new HttpError(413, 'M_TOO_LARGE', 'event too large');
}

route('PUT', '_matrix/client/v3/rooms/*/send/*/*', (ctx, req, [roomId, type, txnId]) => {
  const u = me(req);
  requireJoined(ctx, roomId ?? '', u.userId);
  // Idempotent per access token + transaction id, as the spec requires.
  const key = `${u.token}\u0000${txnId}`;
  const seen = ctx.txns.get(key);
  if (seen) return [200, { event_id: seen }];
  const content = body(req);
  requireSmallEnough({ room_id: roomId, sender: u.userId, type, content });
  const lie = ctx.lies.takeSendLie(u.userId, type ?? '');
  const ev = ctx.model.append(
    { room_id: roomId ?? '', sender: u.userId, type: type ?? '', content },
    { hidden: lie?.withhold === true },
  );
  lie?.stored(ev.event_id);
  const answer = lie?.answerWith ?? ev.event_id;
  ctx.txns.set(key, answer);
  return [200, { event_id: answer }];
});
route('PUT', '_matrix/client/v3/rooms/*/redact/*/*', (ctx, req, [roomId, eventId, txnId]) => {
  const u = me(req);
  requireJoined(ctx, roomId ?? '', u.userId);
  const key = `${u.token}\u0000${txnId}`;
  const seen = ctx.txns.get(key);
  if (seen) return [200, { event_id: seen }];
  const target = ctx.model.event(eventId ?? '');
  if (!target || target.room_id !== roomId) throw new HttpError(404, 'M_NOT_FOUND', 'No event');
  const ev = ctx.model.append({
    room_id: roomId,
    sender: u.userId,
    type: 'm.room.redaction',
    content: { ...body(req), redacts: eventId },
    redacts: eventId ?? '',
  });
  ctx.txns.set(key, ev.event_id);
  return [200, { event_id: ev.event_id }];
});
route('PUT', '_matrix/client/v3/rooms/*/state/*/*', (ctx, req, [roomId, type, stateKey]) => {
  const u = me(req);
  requireJoined(ctx, roomId ?? '', u.userId);
  const ev = ctx.model.append({
    room_id: roomId ?? '',
    sender: u.userId,
    type: type ?? '',
    state_key: stateKey ?? '',
    content: body(req),
  });
  return [200, { event_id: ev.event_id }];
});
route('GET', '_matrix/client/v3/rooms/*/event/*', (ctx, req, [roomId, eventId]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const ev = ctx.model.servedEvent(eventId ?? '');
  if (!ev || ev.room_id !== roomId) throw new HttpError(404, 'M_NOT_FOUND', 'Event not found');
  return [200, ctx.serve(ev, { withRoomId: true, bundle: true })];
});
route('GET', '_matrix/client/v3/rooms/*/state', (ctx, req, [roomId]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const state = [...ctx.model.stateAt(roomId ?? '').values()];
  return [200, state.map((e) => ctx.serve(e, { withRoomId: true, bundle: false }))];
});
const getState: Handler = (ctx, req, [roomId, type, key]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const ev = ctx.model.stateEvent(roomId ?? '', type ?? '', key ?? '');
  if (!ev) throw new HttpError(404, 'M_NOT_FOUND', 'Event not found.');
  return [200, ev.content];
};
route('GET', '_matrix/client/v3/rooms/*/state/*', getState);
route('GET', '_matrix/client/v3/rooms/*/state/*/*', getState);
route('GET', '_matrix/client/v3/rooms/*/joined_members', (ctx, req, [roomId]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const joined: Record<string, { display_name: string | null; avatar_url: null }> = {};
  for (const id of ctx.model.joinedMembers(roomId ?? '')) {
    const dn = ctx.model.stateEvent(roomId ?? '', 'm.room.member', id)?.content['displayname'];
    joined[id] = { display_name: typeof dn === 'string' ? dn : null, avatar_url: null };
  }
  return [200, { joined }];
});
route('GET', '_matrix/client/v3/rooms/*/members', (ctx, req, [roomId]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const wanted = req.query.get('membership');
  const chunk = [...ctx.model.stateAt(roomId ?? '').values()]
    .filter((e) => e.type === 'm.room.member')
    .filter((e) => wanted === null || e.content['membership'] === wanted)
    .map((e) => ctx.serve(e, { withRoomId: true, bundle: false }));
  return [200, { chunk }];
});
const relations: Handler = (ctx, req, [roomId, eventId, relType, eventType]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  if (!ctx.model.servedEvent(eventId ?? '')) throw new HttpError(404, 'M_NOT_FOUND', 'No event');
  const chunk = ctx.model
    .roomStream(roomId ?? '')
    .map((s) => s.event)
    // Redacted relations are gone: their content (and so the relation) was emptied.
    .filter((e) => e.unsigned['redacted_because'] === undefined)
    .filter((e) => {
      const rel = relatesTo(e);
      return (
        rel !== undefined &&
        rel['event_id'] === eventId &&
        (relType === undefined || rel['rel_type'] === relType) &&
        (eventType === undefined || e.type === eventType)
      );
    })
    .map((e) => ctx.serve(e, { withRoomId: true, bundle: true }));
  if (req.query.get('dir') !== 'f') chunk.reverse();
  return [200, { chunk }];
};
route('GET', '_matrix/client/v1/rooms/*/relations/*', relations);
route('GET', '_matrix/client/v1/rooms/*/relations/*/*', relations);
route('GET', '_matrix/client/v1/rooms/*/relations/*/*/*', relations);
route('GET', '_matrix/client/v3/rooms/*/messages', (ctx, req, [roomId]) => {
  requireJoined(ctx, roomId ?? '', me(req).userId);
  const dir = req.query.get('dir') === 'f' ? 'f' : 'b';
  const limit = Math.max(1, Math.min(Number(req.query.get('limit') ?? '10') || 10, 1000));
  const fromParam = req.query.get('from');
  const from = fromParam === null ? undefined : parseToken(fromParam);
  if (fromParam !== null && from === undefined) {
    throw new HttpError(400, 'M_INVALID_PARAM', 'Bad from token');
  }
  const all = ctx.model.roomStream(roomId ?? '');
  // Token s<n> sits after stream position n: forwards reads pos > n, backwards pos <= n.
  const picked =
    dir === 'f'
      ? all.filter((s) => s.pos > (from ?? 0)).slice(0, limit)
      : all
          .filter((s) => s.pos <= (from ?? Number.POSITIVE_INFINITY))
          .slice(-limit)
          .reverse();
  const start = fromParam ?? `s${dir === 'f' ? 0 : ctx.model.head()}`;
  const last = picked[picked.length - 1];
  const res: Record<string, unknown> = {
    chunk: picked.map((s) => ctx.serve(s.event, { withRoomId: true, bundle: true })),
    start,
  };
  if (last) res['end'] = dir === 'f' ? `s${last.pos}` : `s${last.pos - 1}`;
  return [200, res];
});

// --- dispatch --------------------------------------------------------------------

function tokenOf(req: IncomingMessage, query: URLSearchParams): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice(7);
  return query.get('access_token') ?? undefined;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'M_NOT_JSON', 'Content not JSON.');
  }
}

export async function dispatch(
  ctx: RouteContext,
  req: IncomingMessage,
  res: ServerResponse,
  record: (r: RecordedRequest) => void,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const segments = url.pathname
    .split('/')
    .filter(Boolean)
    .map((s) => decodeURIComponent(s));
  const query = url.searchParams;
  const token = tokenOf(req, query);
  const session = token === undefined ? undefined : ctx.e2ee.sessionOfToken(token);
  const account = session === undefined ? undefined : ctx.users.get(session.userId);
  const user: FakeUser | undefined =
    session === undefined || account === undefined
      ? undefined
      : { ...account, token: session.token, deviceId: session.deviceId };
  const shownQuery = Object.fromEntries([...query].filter(([k]) => k !== 'access_token'));
  const recorded: RecordedRequest = {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: shownQuery,
    user: user?.userId,
    status: 0,
  };
  record(recorded);
  let status: number;
  let payload: unknown;
  try {
    const found = routes
      .filter((r) => r.method === req.method)
      .map((r) => ({ r, params: match(r.pattern, segments) }))
      .find((x) => x.params !== undefined);
    if (!found || !found.params) {
      // The spec's answer for an endpoint the server does not implement. matrix-js-sdk 43
      // asks for MatrixRTC's transports (MSC4143, unstable prefix) at every start; this is
      // what a homeserver without MatrixRTC answers, and the SDK caches the 404.
      throw new HttpError(404, 'M_UNRECOGNIZED', 'Unrecognized request');
    }
    if (found.r.auth) {
      if (token === undefined) throw new HttpError(401, 'M_MISSING_TOKEN', 'Missing access token');
      if (!user) throw new HttpError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
    }
    const parsed: Request = { method: req.method ?? 'GET', query, user, body: await readBody(req) };
    [status, payload] = await found.r.handler(ctx, parsed, found.params);
  } catch (err) {
    if (err instanceof HttpError) {
      status = err.status;
      payload = { errcode: err.errcode, error: err.message };
    } else {
      status = 500;
      payload = { errcode: 'M_UNKNOWN', error: String(err) };
    }
  }
  recorded.status = status;
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}
