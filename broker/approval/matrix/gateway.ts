/**
 * The Matrix approval gateway (DESIGN §6): one room, one bot, one approver.
 *
 * Posts each request as one message with 👍 👎 🛇 📋 pre-placed, and turns the
 * approver's reactions, typed commands and withdrawn 👍 into engine calls, answering
 * each in the room. What it refuses to act on, and why:
 * - anything before the first sync is PREPARED: after a restart the SDK re-delivers
 *   old events as "live" during the initial sync (matrix-facts.md); replaying an old
 *   `revoke all` or 👍 would be a decision nobody made now;
 * - an event id already handled (bounded memory);
 * - other senders, other rooms, edits, notices, reactions on messages the bot did not
 *   post as a request (see classify.ts).
 * Expiry never uses the homeserver's timestamps: the engine and store use the
 * broker's clock (DESIGN §4).
 *
 * Refuses to start unless the token is the bot's, the bot and the approver are joined,
 * the room is invite-only and not encrypted (preflight.ts). A homeserver that is merely
 * unreachable at start does not stop the broker: start() resolves with the channel
 * unavailable and keeps retrying (startWhileUnreachable). While the homeserver is
 * unreachable `healthy()` is false and `postRequest` throws ApprovalUnavailableError;
 * once running, matrix-js-sdk reconnects by itself (keep-alive with backoff).
 */
import {
  ClientEvent,
  RoomEvent,
  SyncState,
  type MatrixClient,
  type MatrixEvent,
  type Room,
} from 'matrix-js-sdk';
import type { MatrixConfig } from '../../config.js';
import type { Clock, RequestRecord } from '../../base/domain.js';
import type { Logger } from '../../base/log.js';
import type { ApprovalAudit, Reply } from '../decisions.js';
import type { ApprovalEngine } from '../engine.js';
import { REACTION_KEYS } from '../emoji.js';
import { renderRequest } from '../format.js';
import { ApprovalUnavailableError, type ApprovalGateway } from '../gateway.js';
import { BoundedSet } from './bounded-set.js';
import { classify, type Classified, type IncomingEvent } from './classify.js';
import { createBotClient, errorSummary, sendContent, type EventContent } from './client.js';
import { MatrixGatewayError } from './errors.js';
import { checkSyncedRoom, preflight } from './preflight.js';
import { REQUEST_ID_KEY, RequestIndex, STORE_ID_KEY } from './request-index.js';
import { RoomWatch } from './room-watch.js';
import { routeSdkGlobalLogs } from './sdk-log.js';

export { REQUEST_ID_KEY, STORE_ID_KEY };

export const UNAVAILABLE_MESSAGE = 'approval channel unavailable; existing grants still work';

export interface MatrixGatewayOptions {
  /** Timeline events in the first sync (they are ignored; only state matters). Default 10. */
  initialSyncLimit?: number;
  /** Long-poll timeout of /sync. Default 30 s. */
  pollTimeoutMs?: number;
  /** How long start() waits for the first sync. Default 60 s. */
  preparedTimeoutMs?: number;
  /** Timeout of each non-sync request (send, redact, lookups). Default 20 s. */
  requestTimeoutMs?: number;
  /** healthy() stays false this long after a failed send. Default 60 s. */
  sendFailureWindowMs?: number;
  /**
   * While sync is failing, ask the SDK to retry now every this many ms (on top of its
   * own 2-10 s keep-alive backoff). Default: off.
   */
  reconnectNudgeMs?: number;
  /** Event ids remembered as handled. Default 10 000. */
  handledLimit?: number;
  /** Device id for the access token, when the homeserver needs it. */
  deviceId?: string;
  /**
   * When the homeserver cannot be reached at start (network error, 5xx, 429, or no
   * first sync in time), resolve start() anyway with the channel unavailable, and keep
   * retrying in the background (DESIGN §6: approval down ⇒ request_access answers
   * error; existing grants keep working). Configuration problems (token, membership,
   * room rules) still throw. Default true.
   */
  startWhileUnreachable?: boolean;
  /** Longest wait between those retries. Default 30 s. */
  startRetryMs?: number;
  /** First wait; it doubles after each failed retry, up to startRetryMs. Default 1 s. */
  startRetryFirstMs?: number;
}

/** What the gateway uses of the engine. */
export type MatrixEngine = Pick<
  ApprovalEngine,
  'handleText' | 'handleReaction' | 'undoApprovalReaction' | 'storeId'
>;

/** Reported after each live event is handled (tests and the latency bench wait on it). */
export interface HandledEvent {
  readonly eventId: string;
  readonly kind: Classified['kind'] | 'unknown_target' | 'not_a_command';
  readonly reply?: Reply;
}

export interface MatrixGatewayDeps {
  config: {
    matrix: MatrixConfig | undefined;
    lifecycle: { pending_timeout: number; default_grant: number };
  };
  engine: MatrixEngine;
  logger: Logger;
  now: Clock;
  /** When given, commands from people other than the approver are audited as `refused`. */
  audit?: ApprovalAudit;
  options?: MatrixGatewayOptions;
  onHandled?: (event: HandledEvent) => void;
}

export class MatrixGateway implements ApprovalGateway {
  private readonly cfg: MatrixConfig;
  private readonly opts: Required<Omit<MatrixGatewayOptions, 'deviceId' | 'reconnectNudgeMs'>> &
    Pick<MatrixGatewayOptions, 'deviceId' | 'reconnectNudgeMs'>;
  private client: MatrixClient | undefined;
  /** `waiting`: started without the homeserver (startWhileUnreachable), retrying. */
  private phase: 'new' | 'starting' | 'waiting' | 'started' | 'stopped' = 'new';
  private prepared = false;
  /** The current client synced and passed the room checks. */
  private ready = false;
  private readonly handled: BoundedSet;
  private readonly requests: RequestIndex;
  private readonly room: RoomWatch;
  private lastSendFailureAt: number | undefined;
  private work: Promise<void> = Promise.resolve();
  private nudgeTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = 0;
  private preparedWaiter: (() => void) | undefined;

  constructor(private readonly deps: MatrixGatewayDeps) {
    if (deps.config.matrix === undefined) {
      throw new MatrixGatewayError('bad_response', 'matrix: is missing from the configuration');
    }
    this.cfg = deps.config.matrix;
    const o = deps.options ?? {};
    this.opts = {
      initialSyncLimit: o.initialSyncLimit ?? 10,
      pollTimeoutMs: o.pollTimeoutMs ?? 30_000,
      preparedTimeoutMs: o.preparedTimeoutMs ?? 60_000,
      requestTimeoutMs: o.requestTimeoutMs ?? 20_000,
      sendFailureWindowMs: o.sendFailureWindowMs ?? 60_000,
      handledLimit: o.handledLimit ?? 10_000,
      startWhileUnreachable: o.startWhileUnreachable ?? true,
      startRetryMs: o.startRetryMs ?? 30_000,
      startRetryFirstMs: o.startRetryFirstMs ?? 1_000,
      deviceId: o.deviceId,
      reconnectNudgeMs: o.reconnectNudgeMs,
    };
    this.handled = new BoundedSet(this.opts.handledLimit);
    this.requests = new RequestIndex({
      bot: this.cfg.bot_user,
      storeId: deps.engine.storeId,
      limit: this.opts.handledLimit,
      logger: deps.logger,
      fetchEvent: async (eventId) => {
        if (this.client === undefined) throw new Error('no client');
        return this.client.fetchRoomEvent(this.cfg.room_id, eventId);
      },
    });
    this.room = new RoomWatch(this.cfg, deps.logger);
  }

  // --- lifecycle -------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.phase !== 'new') throw new Error(`MatrixGateway.start() in phase ${this.phase}`);
    this.phase = 'starting';
    routeSdkGlobalLogs(this.deps.logger);
    try {
      await this.connect();
    } catch (err) {
      const transient =
        err instanceof MatrixGatewayError &&
        (err.code === 'unreachable' || err.code === 'sync_timeout');
      if (this.opts.startWhileUnreachable && transient && this.phase === 'starting') {
        // Existing grants must keep working while the approval plane is down, so the
        // daemon may run without it; nothing is posted until the room checks pass.
        this.phase = 'waiting';
        this.retryDelayMs = Math.min(this.opts.startRetryFirstMs, this.opts.startRetryMs);
        this.deps.logger.warn(
          'starting without the Matrix approval channel; retrying in the background',
          { error: err.message, retry_ms: this.retryDelayMs },
        );
        this.scheduleRetry();
        return;
      }
      this.phase = 'stopped';
      throw err;
    }
    this.connected();
  }

  private scheduleRetry(): void {
    const delay = this.retryDelayMs;
    // Quick first retries (a homeserver starting next to the broker), then back off.
    this.retryDelayMs = Math.min(delay * 2, this.opts.startRetryMs);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().then(
        () => {
          if (this.phase === 'waiting') this.connected();
          else this.teardown();
        },
        (err: unknown) => {
          if (this.phase !== 'waiting') return;
          this.deps.logger.warn('the Matrix approval channel still cannot start', {
            code: err instanceof MatrixGatewayError ? err.code : 'unknown',
            error: err instanceof Error ? err.message : 'unknown error',
            retry_ms: this.retryDelayMs,
          });
          this.scheduleRetry();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }

  /** One attempt: a fresh client, preflight, first sync, synced-room checks. */
  private async connect(): Promise<void> {
    const { logger } = this.deps;
    const client = createBotClient(this.cfg, this.opts, logger);
    this.client = client;
    this.prepared = false;
    try {
      const { others } = await preflight(client, this.cfg);
      if (others.length > 0) {
        logger.warn(
          'the approval room has other members: they can read every request, but only the approver can decide',
          { room: this.cfg.room_id, others },
        );
      }
      client.on(ClientEvent.Sync, this.onSync);
      client.on(RoomEvent.Timeline, this.onTimeline);
      const prepared = this.waitForPrepared();
      // Awaited below; this only keeps a rejection during startClient from going unhandled.
      prepared.catch(() => undefined);
      await client.startClient({
        initialSyncLimit: this.opts.initialSyncLimit,
        pollTimeout: this.opts.pollTimeoutMs,
        lazyLoadMembers: false,
        disablePresence: true,
        threadSupport: false,
      });
      await prepared;
      checkSyncedRoom(client.getRoom(this.cfg.room_id), this.cfg.room_id);
      this.ready = true;
    } catch (err) {
      this.teardown();
      throw err;
    }
  }

  private connected(): void {
    this.phase = 'started';
    if (this.opts.reconnectNudgeMs !== undefined) {
      this.nudgeTimer = setInterval(() => this.nudge(), this.opts.reconnectNudgeMs);
      this.nudgeTimer.unref();
    }
    this.deps.logger.info('matrix approval gateway started', {
      room: this.cfg.room_id,
      bot: this.cfg.bot_user,
      approver: this.cfg.approver,
    });
  }

  async stop(): Promise<void> {
    if (this.phase === 'stopped') return;
    this.phase = 'stopped';
    this.teardown();
    await this.work;
  }

  private teardown(): void {
    this.ready = false;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.nudgeTimer !== undefined) clearInterval(this.nudgeTimer);
    this.nudgeTimer = undefined;
    this.preparedWaiter?.();
    const client = this.client;
    if (client === undefined) return;
    client.off(ClientEvent.Sync, this.onSync);
    client.off(RoomEvent.Timeline, this.onTimeline);
    client.stopClient();
  }

  private waitForPrepared(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.preparedWaiter = undefined;
        reject(
          new MatrixGatewayError(
            'sync_timeout',
            `no first sync from ${this.cfg.homeserver} within ${Math.round(this.opts.preparedTimeoutMs / 1000)} s; check that the homeserver is up and reachable`,
          ),
        );
      }, this.opts.preparedTimeoutMs);
      this.preparedWaiter = () => {
        clearTimeout(timer);
        this.preparedWaiter = undefined;
        if (this.prepared) resolve();
        else reject(new MatrixGatewayError('sync_timeout', 'stopped before the first sync'));
      };
    });
  }

  private nudge(): void {
    const state = this.client?.getSyncState();
    if (state === SyncState.Error || state === SyncState.Reconnecting) {
      this.client?.retryImmediately();
    }
  }

  // --- health ----------------------------------------------------------------------

  healthy(): boolean {
    if (this.phase !== 'started' || !this.ready || this.client === undefined) return false;
    if (this.room.problem() !== undefined) return false;
    const state = this.client.getSyncState();
    if (state === null || state === SyncState.Error || state === SyncState.Stopped) return false;
    if (
      this.lastSendFailureAt !== undefined &&
      this.deps.now() - this.lastSendFailureAt < this.opts.sendFailureWindowMs
    ) {
      return false;
    }
    return true;
  }

  private usableClient(): MatrixClient {
    if (this.phase === 'stopped') {
      throw new ApprovalUnavailableError('stopped', 'approval channel stopped');
    }
    if (!this.ready || this.client === undefined) {
      if (this.phase === 'waiting') {
        throw new ApprovalUnavailableError('unhealthy', UNAVAILABLE_MESSAGE);
      }
      throw new ApprovalUnavailableError('not_started', 'approval channel not started yet');
    }
    const problem = this.room.problem();
    if (problem !== undefined) {
      throw new ApprovalUnavailableError('unhealthy', `${UNAVAILABLE_MESSAGE} (${problem})`);
    }
    if (this.client.getSyncState() === SyncState.Error) this.client.retryImmediately();
    return this.client;
  }

  // --- sending ---------------------------------------------------------------------

  private async send(type: string, content: EventContent, what: string): Promise<string> {
    const client = this.usableClient();
    try {
      const eventId = await sendContent(client, this.cfg.room_id, type, content);
      this.lastSendFailureAt = undefined;
      return eventId;
    } catch (err) {
      this.lastSendFailureAt = this.deps.now();
      this.deps.logger.warn('matrix send failed', { what, error: errorSummary(err) });
      throw new ApprovalUnavailableError('send_failed', UNAVAILABLE_MESSAGE, { cause: err });
    }
  }

  async postRequest(request: RequestRecord): Promise<void> {
    const { lifecycle } = this.deps.config;
    const storeId = this.deps.engine.storeId;
    const rendered = renderRequest(request, {
      expiresIn: request.createdAt + lifecycle.pending_timeout - this.deps.now(),
      defaultGrant: lifecycle.default_grant,
    });
    const eventId = await this.send(
      'm.room.message',
      {
        msgtype: 'm.text',
        body: rendered.plain,
        format: 'org.matrix.custom.html',
        formatted_body: rendered.html,
        [REQUEST_ID_KEY]: request.id,
        // The number is only unique within one grant database (see RequestIndex).
        ...(storeId === undefined ? {} : { [STORE_ID_KEY]: storeId }),
      },
      'request',
    );
    this.requests.posted(eventId, request.id);
    // The reactions are a convenience: typed commands work without them.
    for (const key of REACTION_KEYS) {
      try {
        await this.send(
          'm.reaction',
          { 'm.relates_to': { rel_type: 'm.annotation', event_id: eventId, key } },
          'reaction',
        );
      } catch {
        break;
      }
    }
  }

  async announce(text: string): Promise<void> {
    await this.send('m.room.message', { msgtype: 'm.notice', body: text }, 'announce');
  }

  private async reply(reply: Reply, inReplyTo: string | undefined): Promise<void> {
    const content: EventContent = {
      msgtype: 'm.notice',
      body: reply.text,
      format: 'org.matrix.custom.html',
      formatted_body: reply.html,
    };
    if (inReplyTo !== undefined)
      content['m.relates_to'] = { 'm.in_reply_to': { event_id: inReplyTo } };
    try {
      await this.send('m.room.message', content, 'reply');
    } catch {
      // Already logged; the decision stands and `status` shows it.
    }
  }

  // --- receiving -------------------------------------------------------------------

  private readonly onSync = (state: SyncState, prev: SyncState | null): void => {
    if (state === SyncState.Prepared) {
      this.prepared = true;
      this.preparedWaiter?.();
    }
    if (state === prev) return;
    if (state === SyncState.Syncing) {
      // The connection is back: a send failure from the outage no longer says anything.
      this.lastSendFailureAt = undefined;
    }
    if (state === SyncState.Error) {
      this.deps.logger.warn(
        'matrix sync is failing; the approval channel is unavailable until it recovers',
      );
    } else if (
      state === SyncState.Syncing &&
      (prev === SyncState.Error || prev === SyncState.Catchup || prev === SyncState.Reconnecting)
    ) {
      this.deps.logger.info('matrix sync recovered');
    }
  };

  private readonly onTimeline = (
    event: MatrixEvent,
    _room: Room | undefined,
    toStartOfTimeline: boolean | undefined,
    removed: boolean,
    data: { liveEvent?: boolean },
  ): void => {
    if (toStartOfTimeline === true || removed || data.liveEvent !== true) return;
    const id = event.getId();
    // Local echoes of the bot's own sends carry no server id yet.
    if (id === undefined || event.status !== null) return;
    // Security: no replay. Events delivered before the first sync is PREPARED are the
    // re-delivered past (getSyncState() is null then); remember them, never act on them.
    if (!this.prepared || this.client?.getSyncState() === null) {
      this.handled.add(id);
      return;
    }
    // Security: each event acts at most once.
    if (!this.handled.add(id)) return;
    const raw = event.event;
    const incoming: IncomingEvent = {
      eventId: id,
      roomId: event.getRoomId(),
      sender: event.getSender(),
      type: event.getType(),
      content: raw.content,
      redacts: typeof raw.redacts === 'string' ? raw.redacts : undefined,
      stateKey: event.getStateKey(),
    };
    // One at a time, in timeline order: a 👍 and its withdrawal must not overtake each other.
    this.work = this.work
      .then(() => this.handle(incoming))
      .catch((err: unknown) => {
        this.deps.logger.error('handling a matrix event failed', { error: errorSummary(err) });
      });
  };

  private async handle(ev: IncomingEvent): Promise<void> {
    if (this.phase === 'stopped') return;
    const c = classify(ev, {
      roomId: this.cfg.room_id,
      approver: this.cfg.approver,
      bot: this.cfg.bot_user,
    });
    const done = (kind: HandledEvent['kind'], reply?: Reply): void =>
      this.deps.onHandled?.({ eventId: ev.eventId, kind, ...(reply ? { reply } : {}) });
    const actor = this.cfg.approver;
    switch (c.kind) {
      case 'ignore':
        return done('ignore');
      case 'membership':
        this.room.onMembership(c.userId, c.membership);
        return done('membership');
      case 'room_state':
        this.room.onRoomState(c.stateType, c.content);
        return done('room_state');
      case 'stranger':
        await this.onStranger(ev, c);
        return done('stranger');
      case 'reaction': {
        const requestId = await this.requests.requestOf(c.target);
        if (requestId === undefined) return done('unknown_target');
        // The engine records a 👍 that granted something (in the grant store), so that
        // withdrawing it undoes the approval, after a restart too (DESIGN §6).
        const reply = await this.deps.engine.handleReaction(c.key, requestId, actor, {
          eventId: ev.eventId,
          roomId: this.cfg.room_id,
        });
        if (reply === null) return done('not_a_command');
        await this.reply(reply, c.target);
        return done('reaction', reply);
      }
      case 'text': {
        const reply = await this.deps.engine.handleText(c.body, actor);
        if (reply === null) return done('not_a_command');
        await this.reply(reply, ev.eventId);
        return done('text', reply);
      }
      case 'redaction': {
        // Security: classify() passes only the approver's own redactions in this room
        // (a moderator removing the approver's 👍 is not the approver withdrawing it);
        // the store also requires the redacting approver and room to be the 👍's own,
        // and undoes each 👍 at most once.
        const reply = await this.deps.engine.undoApprovalReaction(
          { eventId: c.target, roomId: this.cfg.room_id },
          actor,
        );
        if (reply === null) return done('unknown_target');
        await this.reply(reply, undefined);
        return done('redaction', reply);
      }
    }
  }

  private async onStranger(
    ev: IncomingEvent,
    c: Extract<Classified, { kind: 'stranger' }>,
  ): Promise<void> {
    if (!c.commandLike) return;
    // Security: the stranger is told nothing; the owner can see the attempt in the log
    // and the audit trail.
    this.deps.logger.warn('ignored a command from someone who is not the approver', {
      sender: c.sender,
      what: c.what,
    });
    try {
      await this.deps.audit?.append('refused', {
        surface: 'matrix',
        actor: c.sender,
        reason: 'not_approver',
        what: c.what,
        event_id: ev.eventId,
      });
    } catch (err) {
      this.deps.logger.error('audit append failed', { error: errorSummary(err) });
    }
  }
}
