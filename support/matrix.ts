/**
 * End-to-end rigs for the Matrix gateway: the fake homeserver, a real GrantStore
 * (SQLite in memory), a real AuditLog (temp dir) and the real ApprovalEngine (all from
 * support/approval.ts), and MatrixGateway instances driven through matrix-js-sdk: in a
 * clear-text room (`matrixRig`), and in an encrypted one with the owner's phone and
 * another session of the owner's account as real Rust-crypto clients (`e2eeRig`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApprovalEngineDeps } from '../broker/approval/engine.js';
import type { GrantRecord, RequestRecord } from '../broker/base/domain.js';
import { memoryLogger } from '../broker/base/log.js';
import type { AuditRecord } from '../broker/audit/index.js';
import type { MatrixConfig } from '../broker/config.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
  type MatrixGatewayOptions,
  type MatrixPairing,
} from '../broker/approval/matrix/gateway.js';
import { harness, LIFECYCLE, type Harness } from './approval.js';
import { startFakeHomeserver, type FakeHomeserver, type RoomSpec } from '../fakes/homeserver.js';
import { e2eeClient, eventSeenBy, type E2eeClient } from './e2ee-client.js';
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

/** The approval room encrypted: the bot, the owner's pinned phone and an unpinned session. */
export interface E2eeRig {
  readonly hs: FakeHomeserver;
  /** The grant store, audit log and engine now in use. */
  readonly core: Harness;
  /** The owner's phone: its device is pinned in matrix.approver_devices. */
  readonly phone: E2eeClient;
  /** Another session of the owner's account (an agent logged in as the owner): not pinned. */
  readonly laptop: E2eeClient;
  readonly dataDir: string;
  readonly logger: ReturnType<typeof memoryLogger>;
  readonly handled: HandledEvent[];
  /** The running gateway. */
  gw: MatrixGateway;
  config(over?: Partial<MatrixConfig>): MatrixConfig;
  /** A new gateway on the rig's store, engine and data folder (not started). */
  gateway(over?: Partial<MatrixConfig>, options?: MatrixGatewayOptions): MatrixGateway;
  /** Stops the running gateway and starts a new one (the same store and identity). */
  restart(options?: MatrixGatewayOptions): Promise<void>;
  /**
   * Stops the running gateway, replaces the grant database (and audit log) with new
   * ones, where request numbers start at 1 again, and starts a gateway on them.
   */
  newDatabase(): Promise<void>;
  handledOf(eventId: string): Promise<HandledEvent>;
  /** Posts a new request; its number and the ids its message and poll were stored under. */
  post(
    items?: [string, 'read' | 'write'][],
  ): Promise<{ id: number; messageId: string; pollId: string }>;
  /** Sends any event type as `c` (encrypted: the room is). */
  send(c: E2eeClient, type: string, content: object): Promise<string>;
  say(c: E2eeClient, body: string): Promise<string>;
  /**
   * `c` sends with `send`, but the homeserver withholds the event until `dress` (given
   * its id) has dressed it up, then serves it: the bot first sees it dressed.
   */
  dressed(send: () => Promise<string>, dress: (eventId: string) => void): Promise<string>;
  /** The id of `answer` in the poll, as the phone reads it. */
  answerId(pollId: string, answer: 'approve' | 'deny'): Promise<string>;
  /** `c` votes `answer` on the poll, with the answer id the phone reads in it. */
  vote(c: E2eeClient, pollId: string, answer: 'approve' | 'deny'): Promise<string>;
  active(requestId: number): GrantRecord[];
  /** The request's state in the grant store (`pending`, `approved`, …). */
  state(requestId: number): string | undefined;
  /** The audit's `refused` records for `eventId`. */
  refusals(eventId: string): AuditRecord[];
  /** The audit's `decision` records for request `requestId`. */
  decisions(requestId: number): AuditRecord[];
  /** The bot's notices as `c` reads them. */
  noticesSeenBy(c: E2eeClient): Promise<string[]>;
  /**
   * Resolves once the phone has every notice the bot sent so far: the phone asks for
   * `help` and waits for the answer, which the bot sends after them.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export const E2EE_BOT_PASSWORD = 'bot-password-0123456789';
export const E2EE_CRYPTO_SECRET = 'crypto-secret-0123456789abcdef0123456789';

const POLL_START_TYPE = 'org.matrix.msc3381.poll.start';

export interface E2eeRigOptions {
  /** Pin the phone in matrix.approver_devices (default true). */
  readonly pinPhone?: boolean;
  /** Pairing for the gateway (support/pairing.ts), built on the rig's store and data folder. */
  readonly pairing?: (core: Harness, dataDir: string) => MatrixPairing;
  /** What the engine runs for `undo` (the harness's option). */
  readonly undo?: ApprovalEngineDeps['undo'];
}

export async function e2eeRig(opts: E2eeRigOptions = {}): Promise<E2eeRig> {
  const hs = await startFakeHomeserver({
    users: { ...TOKENS, [BOT]: { token: TOKENS[BOT], password: E2EE_BOT_PASSWORD } },
  });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT], encrypted: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'broker-e2ee-'));
  // The engine of an encrypted room (help, and what only a pinned device may decide).
  const engineOptions = {
    encrypted: true,
    ...(opts.undo === undefined ? {} : { undo: opts.undo }),
  };
  let core = await harness(engineOptions);
  const [phone, laptop] = await Promise.all([
    e2eeClient(hs, OWNER, 'PHONEDEVICE'),
    e2eeClient(hs, OWNER, 'LAPTOPDEVICE'),
  ]);
  const logger = memoryLogger();
  const handled: HandledEvent[] = [];
  const pairing = opts.pairing?.(core, dataDir);
  const config = (over: Partial<MatrixConfig> = {}): MatrixConfig => ({
    homeserver: hs.url,
    bot_user: BOT,
    bot_token: TOKENS[BOT],
    room_id: ROOM,
    approver: OWNER,
    encryption: 'required',
    approver_devices:
      opts.pinPhone === false ? [] : [{ deviceId: phone.deviceId, ed25519: phone.ed25519 }],
    crypto_secret: E2EE_CRYPTO_SECRET,
    bot_password: E2EE_BOT_PASSWORD,
    ...over,
  });
  const gateway = (
    over: Partial<MatrixConfig> = {},
    options: MatrixGatewayOptions = {},
  ): MatrixGateway =>
    new MatrixGateway({
      config: { matrix: config(over), lifecycle: LIFECYCLE },
      engine: core.engine,
      logger,
      now: () => core.clock.now,
      audit: core.audit,
      options: { ...FAST, startWhileUnreachable: false, ...options },
      onHandled: (e) => handled.push(e),
      dataDir,
      ...(pairing === undefined ? {} : { pairing }),
    });
  const send = async (c: E2eeClient, type: string, content: object): Promise<string> => {
    const sendEvent = c.client.sendEvent.bind(c.client) as unknown as (
      roomId: string,
      type: string,
      content: object,
    ) => Promise<{ event_id: string }>;
    return (await sendEvent(ROOM, type, content)).event_id;
  };
  const records = (event: string) => core.records().filter((r) => r.event === event);
  const rig: E2eeRig = {
    hs,
    get core() {
      return core;
    },
    phone,
    laptop,
    dataDir,
    logger,
    handled,
    gw: gateway(),
    config,
    gateway,
    restart: async (options) => {
      await rig.gw.stop();
      rig.gw = gateway({}, options);
      await rig.gw.start();
    },
    newDatabase: async () => {
      await rig.gw.stop();
      await core.close();
      core = await harness(engineOptions);
      rig.gw = gateway();
      await rig.gw.start();
    },
    handledOf: async (eventId) => {
      await until(`event ${eventId} handled`, () => handled.some((h) => h.eventId === eventId));
      const found = handled.find((h) => h.eventId === eventId);
      if (found === undefined) throw new Error('unreachable');
      return found;
    },
    post: async (items = [['Documents/taxes', 'read']]) => {
      const before = hs.timeline(ROOM).length;
      const id = core.request(items, 'personal');
      const request = core.store.getRequest(id);
      if (request === undefined) throw new Error('request vanished');
      await rig.gw.postRequest(request);
      // The events the bot's two sends stored (whatever ids a lying server answered).
      const [message, poll] = hs
        .timeline(ROOM)
        .slice(before)
        .filter((e) => e.sender === BOT);
      if (message === undefined || poll === undefined) throw new Error('no message and poll');
      return { id, messageId: message.event_id, pollId: poll.event_id };
    },
    send,
    say: async (c, body) => (await c.client.sendTextMessage(ROOM, body)).event_id,
    dressed: async (sendIt, dress) => {
      const stored = hs.lie.nextSend(OWNER, { withhold: true });
      const answered = await sendIt();
      const id = await stored;
      if (answered !== id) throw new Error('the send was answered with another id');
      dress(id);
      hs.lie.release(id);
      return id;
    },
    answerId: async (pollId, answer) => {
      const poll = await eventSeenBy(phone, ROOM, pollId);
      const answers = (poll.getClearContent()?.[POLL_START_TYPE] as { answers?: { id: string }[] })
        ?.answers;
      const id = answers?.find((a) => a.id === answer || a.id.startsWith(`${answer}-`))?.id;
      if (id === undefined) throw new Error(`no "${answer}" answer in poll ${pollId}`);
      return id;
    },
    vote: async (c, pollId, answer) =>
      send(
        c,
        'org.matrix.msc3381.poll.response',
        voteContent(pollId, await rig.answerId(pollId, answer)),
      ),
    active: (requestId) => core.store.activeGrants().filter((g) => g.requestId === requestId),
    state: (requestId) => core.store.getRequest(requestId)?.state,
    refusals: (eventId) => records('refused').filter((r) => r['event_id'] === eventId),
    decisions: (requestId) => records('decision').filter((r) => r['request'] === requestId),
    noticesSeenBy: async (c) =>
      (await c.events(ROOM))
        .filter((e) => e.getSender() === BOT && !e.isDecryptionFailure())
        .map((e) => String(e.getClearContent()?.['body'] ?? '')),
    settled: async () => {
      const asked = await rig.say(phone, 'help');
      await rig.handledOf(asked);
      await until('the phone has read the answer to help', async () =>
        (await phone.events(ROOM)).some(
          (e) =>
            e.getSender() === BOT &&
            (
              e.getClearContent()?.['m.relates_to'] as { 'm.in_reply_to'?: { event_id?: string } }
            )?.['m.in_reply_to']?.event_id === asked,
        ),
      );
    },
    close: async () => {
      await rig.gw.stop();
      phone.stop();
      laptop.stop();
      await hs.close();
      await core.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  await rig.gw.start();
  return rig;
}

/** The content of an edit (`m.replace`) of `target` into `body`, as Element sends one. */
export function textEdit(target: string, body: string): Record<string, unknown> {
  return {
    msgtype: 'm.text',
    body: `* ${body}`,
    'm.new_content': { msgtype: 'm.text', body },
    'm.relates_to': { rel_type: 'm.replace', event_id: target },
  };
}

/** The content of a poll vote (MSC3381, as Element sends it) for answer `answerId`. */
export function voteContent(pollId: string, answerId: string): Record<string, unknown> {
  return {
    'm.relates_to': { rel_type: 'm.reference', event_id: pollId },
    'org.matrix.msc3381.poll.response': { answers: [answerId] },
  };
}
