/**
 * End-to-end rig for the Matrix gateway: the fake homeserver, a real GrantStore
 * (SQLite in memory), a real AuditLog (temp dir) and the real ApprovalEngine (all from
 * support/approval.ts), and MatrixGateway instances driven through matrix-js-sdk.
 */
import type { RequestRecord } from '../broker/base/domain.js';
import { memoryLogger } from '../broker/base/log.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
  type MatrixGatewayOptions,
} from '../broker/approval/matrix/gateway.js';
import { harness, LIFECYCLE, type Harness } from './approval.js';
import { startFakeHomeserver, type FakeHomeserver, type RoomSpec } from '../fakes/homeserver.js';
import { until } from './until.js';

export const BOT = '@broker-bot:hs.test';
export const OWNER = '@owner:hs.test';
export const STRANGER = '@eve:hs.test';
/** Same localpart as the owner, another server: must not count as the owner. */
export const OWNER_LOOKALIKE = '@owner:evil.test';
export const ROOM = '!approvals:hs.test';
export const OTHER_ROOM = '!elsewhere:hs.test';

export const TOKENS = {
  [BOT]: 'bot-access-token-0123456789abcdef',
  [OWNER]: 'owner-access-token-0123456789abcdef',
  [STRANGER]: 'eve-access-token-0123456789abcdef',
  [OWNER_LOOKALIKE]: 'lookalike-access-token-0123456789',
};

/** Small SDK timeouts so a test never waits on production-sized ones. */
export const FAST: MatrixGatewayOptions = {
  initialSyncLimit: 5,
  pollTimeoutMs: 1_000,
  preparedTimeoutMs: 5_000,
  requestTimeoutMs: 2_000,
  reconnectNudgeMs: 100,
};

/** A Client-Server API call over plain HTTP, below any SDK (`token` null: none sent). */
export async function hsCall(
  baseUrl: string,
  method: string,
  path: string,
  opts: { token: string | null; body?: unknown },
): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token !== null) headers['authorization'] = `Bearer ${opts.token}`;
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

export interface MatrixRig {
  hs: FakeHomeserver;
  core: Harness;
  logger: ReturnType<typeof memoryLogger>;
  handled: HandledEvent[];
  /** A new gateway on the rig's store/engine (not started). */
  gateway(opts?: { options?: MatrixGatewayOptions; token?: string; room?: string }): MatrixGateway;
  /** Starts a new gateway (stopped by close()). */
  start(opts?: { options?: MatrixGatewayOptions }): Promise<MatrixGateway>;
  /** Resolves when the running gateway has handled `eventId`. */
  handledOf(eventId: string, timeoutMs?: number): Promise<HandledEvent>;
  /** Creates a request in the store and posts it; returns it with its message id. */
  post(
    gw: MatrixGateway,
    items: [string, 'read' | 'write'][],
    instance?: string,
  ): Promise<{ request: RequestRecord; messageId: string }>;
  /** The bot's messages in the room (notices: replies and announcements). */
  botNotices(): string[];
  close(): Promise<void>;
}

export async function matrixRig(
  opts: { room?: Partial<RoomSpec>; members?: string[] } = {},
): Promise<MatrixRig> {
  const core = await harness();
  const hs = await startFakeHomeserver({ users: TOKENS });
  hs.createRoom({ id: ROOM, members: opts.members ?? [OWNER, BOT], ...opts.room });
  const logger = memoryLogger();
  const handled: HandledEvent[] = [];
  const gateways: MatrixGateway[] = [];

  const gateway: MatrixRig['gateway'] = (o = {}) => {
    const gw = new MatrixGateway({
      config: {
        matrix: {
          homeserver: hs.url,
          bot_user: BOT,
          bot_token: o.token ?? TOKENS[BOT],
          room_id: o.room ?? ROOM,
          approver: OWNER,
        },
        lifecycle: LIFECYCLE,
      },
      engine: core.engine,
      logger,
      now: () => core.clock.now,
      audit: core.audit,
      options: { ...FAST, ...o.options },
      onHandled: (e) => handled.push(e),
    });
    gateways.push(gw);
    return gw;
  };

  const rig: MatrixRig = {
    hs,
    core,
    logger,
    handled,
    gateway,
    start: async (o = {}) => {
      const gw = gateway(o);
      await gw.start();
      return gw;
    },
    handledOf: async (eventId, timeoutMs = 8_000) => {
      await until(
        `event ${eventId} handled`,
        () => handled.some((h) => h.eventId === eventId),
        timeoutMs,
      );
      const found = handled.find((h) => h.eventId === eventId);
      if (!found) throw new Error('unreachable');
      return found;
    },
    post: async (gw, items, instance = 'personal') => {
      const id = core.request(items, instance);
      const request = core.store.getRequest(id);
      if (!request) throw new Error('request vanished');
      await gw.postRequest(request);
      const message = hs
        .timeline(ROOM)
        .find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id);
      if (!message) throw new Error(`request ${id} not in the room`);
      return { request, messageId: message.event_id };
    },
    botNotices: () =>
      hs
        .timeline(ROOM)
        .filter((e) => e.sender === BOT && e.content['msgtype'] === 'm.notice')
        .map((e) => String(e.content['body'])),
    close: async () => {
      for (const gw of gateways) await gw.stop();
      await hs.close();
      await core.close();
    },
  };
  return rig;
}
