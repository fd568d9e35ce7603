/**
 * A fake Matrix homeserver on 127.0.0.1 (port 0 by default): the Client-Server API
 * subset matrix-js-sdk@43 needs, answered as the Matrix spec says and Synapse does, plus
 * an injection API for tests to act as other users and to simulate an outage, and a
 * hostile mode (`lie`, homeserver/lies.ts) in which it does what a homeserver can do to
 * an encrypted room.
 */
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { E2eeState } from './homeserver/e2ee-state.js';
import { Lies } from './homeserver/lies.js';
import { HomeserverModel } from './homeserver/model.js';
import type { MatrixEvent, RoomSpec } from './homeserver/model.js';
import { dispatch } from './homeserver/routes.js';
import { serveEvent } from './homeserver/serve.js';
import type { FakeUser, RecordedRequest, RouteContext } from './homeserver/routes.js';
import type { SyncFilter } from './homeserver/sync.js';

export type { Lies, MatrixEvent, RoomSpec, RecordedRequest };

export interface FakeUserSpec {
  token: string;
  /** For POST /login; defaults to "password". */
  password?: string;
  deviceId?: string;
}

export interface FakeHomeserverOptions {
  /** userId → access token (or a full spec). */
  users: Record<string, string | FakeUserSpec>;
  port?: number;
  /** The server's clock for origin_server_ts; defaults to Date.now. */
  now?: () => number;
}

/** 'refuse': the listener closes and every connection drops; '502': a proxy answers 502. */
export type OutageMode = 'refuse' | '502';

export interface FakeHomeserver {
  readonly url: string;
  readonly port: number;
  /** Every request received, in order (access tokens never recorded). */
  readonly requests: RecordedRequest[];
  createRoom(spec: RoomSpec): string;
  sendAs(userId: string, roomId: string, type: string, content: Record<string, unknown>): string;
  /** Sets a state event (e.g. join rules, membership) as `userId`. */
  setStateAs(
    userId: string,
    roomId: string,
    type: string,
    stateKey: string,
    content: Record<string, unknown>,
  ): string;
  /** `userId` joins (no invite needed: this is the test speaking, not a client). */
  joinAs(userId: string, roomId: string): string;
  leaveAs(userId: string, roomId: string): string;
  reactAs(userId: string, roomId: string, targetEventId: string, key: string): string;
  redactAs(userId: string, roomId: string, eventId: string, reason?: string): string;
  /** An `m.replace` edit of `targetEventId` with a `* …` fallback body. */
  editAs(userId: string, roomId: string, targetEventId: string, newBody: string): string;
  /** A reply carrying the `> <@sender> …` fallback quote before `body`. */
  replyAs(userId: string, roomId: string, targetEventId: string, body: string): string;
  /** A plain text message. */
  sayAs(userId: string, roomId: string, body: string): string;
  timeline(roomId: string): MatrixEvent[];
  /** A new session of `userId` (as a password login makes): its device id and token. */
  login(userId: string, deviceId?: string): { deviceId: string; token: string };
  /** The device ids of `userId`'s sessions. */
  devices(userId: string): string[];
  event(eventId: string): MatrixEvent | undefined;
  outage(on: boolean, mode?: OutageMode): Promise<void>;
  /** Answers `status` to every request whose path matches `pattern` (undefined: stop). */
  failRoute(pattern: RegExp | undefined, status?: number): void;
  /**
   * Holds every /sync of `userId` (a slow link to that client): none is answered until
   * the returned function is called, then the next carries everything since, limited
   * to the filter's timeline limit as any server does.
   */
  holdSync(userId: string): () => void;
  /** The hostile mode: what a homeserver can do to an encrypted room (lies.ts). */
  readonly lie: Lies;
  close(): Promise<void>;
}

export async function startFakeHomeserver(opts: FakeHomeserverOptions): Promise<FakeHomeserver> {
  const now = opts.now ?? Date.now;
  const users = new Map<string, FakeUser>();
  for (const [userId, spec] of Object.entries(opts.users)) {
    const s = typeof spec === 'string' ? { token: spec } : spec;
    users.set(userId, {
      userId,
      token: s.token,
      password: s.password ?? 'password',
      deviceId: s.deviceId ?? `DEV${users.size + 1}`,
    });
  }
  const model = new HomeserverModel(now);
  const waiters = new Set<() => void>();
  model.onAppend(() => {
    for (const wake of [...waiters]) wake();
  });
  const waitForChange = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      waiters.add(done);
    });
  const e2ee = new E2eeState(() => {
    for (const wake of [...waiters]) wake();
  });
  for (const u of users.values()) {
    e2ee.createSession(u.userId, { deviceId: u.deviceId, token: u.token });
  }
  const lies = new Lies(model, e2ee);
  const heldSyncs = new Set<string>();
  const ctx: RouteContext = {
    model,
    e2ee,
    users,
    now,
    waitForChange,
    filters: new Map<string, SyncFilter>(),
    txns: new Map<string, string>(),
    lies,
    serve: (event, opts) => serveEvent(model, lies, event, now(), opts),
    heldSyncs,
  };
  const requests: RecordedRequest[] = [];
  let outageMode: OutageMode | null = null;
  let failing: { pattern: RegExp; status: number } | undefined;

  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res: ServerResponse) => {
    if (outageMode === '502') {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      return;
    }
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (failing !== undefined && failing.pattern.test(path)) {
      requests.push({
        method: req.method ?? 'GET',
        path,
        query: {},
        user: undefined,
        status: failing.status,
      });
      res.writeHead(failing.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ errcode: 'M_UNKNOWN', error: 'injected failure' }));
      return;
    }
    dispatch(ctx, req, res, (r) => requests.push(r)).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const dropEverything = (): void => {
    heldSyncs.clear();
    // Wake long-polls so their timers end, then cut every connection.
    for (const wake of [...waiters]) wake();
    for (const socket of sockets) socket.destroy();
  };
  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      server.close(() => resolve());
      dropEverything();
    });

  await listen(opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;

  const mustBeJoined = (userId: string, roomId: string): void => {
    if (model.membership(roomId, userId) !== 'join') {
      throw new Error(`${userId} is not joined to ${roomId}`);
    }
  };
  const sendAs: FakeHomeserver['sendAs'] = (userId, roomId, type, content) => {
    mustBeJoined(userId, roomId);
    return model.append({ room_id: roomId, sender: userId, type, content }).event_id;
  };
  const messageOf = (eventId: string): MatrixEvent => {
    const target = model.event(eventId);
    if (!target) throw new Error(`no event ${eventId}`);
    return target;
  };

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    createRoom: (spec) => model.createRoom(spec),
    sendAs,
    setStateAs: (userId, roomId, type, stateKey, content) => {
      mustBeJoined(userId, roomId);
      return model.append({ room_id: roomId, sender: userId, type, state_key: stateKey, content })
        .event_id;
    },
    joinAs: (userId, roomId) =>
      model.append({
        room_id: roomId,
        sender: userId,
        type: 'm.room.member',
        state_key: userId,
        content: { membership: 'join' },
      }).event_id,
    leaveAs: (userId, roomId) => {
      mustBeJoined(userId, roomId);
      return model.append({
        room_id: roomId,
        sender: userId,
        type: 'm.room.member',
        state_key: userId,
        content: { membership: 'leave' },
      }).event_id;
    },
    reactAs: (userId, roomId, targetEventId, key) =>
      sendAs(userId, roomId, 'm.reaction', {
        'm.relates_to': { rel_type: 'm.annotation', event_id: targetEventId, key },
      }),
    redactAs: (userId, roomId, eventId, reason) => {
      mustBeJoined(userId, roomId);
      return model.append({
        room_id: roomId,
        sender: userId,
        type: 'm.room.redaction',
        content: { redacts: eventId, ...(reason !== undefined ? { reason } : {}) },
        redacts: eventId,
      }).event_id;
    },
    editAs: (userId, roomId, targetEventId, newBody) =>
      sendAs(userId, roomId, 'm.room.message', {
        msgtype: 'm.text',
        body: `* ${newBody}`,
        'm.new_content': { msgtype: 'm.text', body: newBody },
        'm.relates_to': { rel_type: 'm.replace', event_id: targetEventId },
      }),
    replyAs: (userId, roomId, targetEventId, body) => {
      const target = messageOf(targetEventId);
      const quoted = String(target.content['body'] ?? '')
        .split('\n')
        .map((line, i) => (i === 0 ? `> <${target.sender}> ${line}` : `> ${line}`))
        .join('\n');
      return sendAs(userId, roomId, 'm.room.message', {
        msgtype: 'm.text',
        body: `${quoted}\n\n${body}`,
        'm.relates_to': { 'm.in_reply_to': { event_id: targetEventId } },
      });
    },
    sayAs: (userId, roomId, body) =>
      sendAs(userId, roomId, 'm.room.message', { msgtype: 'm.text', body }),
    timeline: (roomId) => structuredClone(model.roomEvents(roomId)),
    login: (userId, deviceId) => {
      if (!users.has(userId)) throw new Error(`no user ${userId}`);
      const s = e2ee.createSession(userId, { deviceId });
      return { deviceId: s.deviceId, token: s.token };
    },
    devices: (userId) => e2ee.devicesOf(userId).map((s) => s.deviceId),
    event: (eventId) => {
      const ev = model.event(eventId);
      return ev ? structuredClone(ev) : undefined;
    },
    outage: async (on, mode = 'refuse') => {
      if (on) {
        if (outageMode !== null) return;
        outageMode = mode;
        if (mode === 'refuse') await stopListening();
        else dropEverything();
        return;
      }
      if (outageMode === null) return;
      const was = outageMode;
      outageMode = null;
      if (was === 'refuse') await listen(port);
    },
    failRoute: (pattern, status = 502) => {
      failing = pattern === undefined ? undefined : { pattern, status };
    },
    holdSync: (userId) => {
      heldSyncs.add(userId);
      return () => {
        heldSyncs.delete(userId);
        for (const wake of [...waiters]) wake();
      };
    },
    lie: lies,
    close: async () => {
      if (outageMode === 'refuse') {
        outageMode = null;
        return;
      }
      await stopListening();
    },
  };
}
