/**
 * The gateway's connection to the homeserver: a bot client per attempt, the preflight
 * checks, the first sync, the synced-room checks, and the retries while the homeserver
 * cannot be reached at start (startWhileUnreachable). Once running, matrix-js-sdk
 * reconnects by itself (keep-alive with backoff); `reconnectNudgeMs` asks it to retry
 * sooner. Timeline events go to the gateway's handler; replays (events before the
 * first sync) are the gateway's to recognise through `replaying()`.
 */
import type { Direction } from 'matrix-js-sdk';
import {
  ClientEvent,
  EventTimeline,
  RoomEvent,
  SyncState,
  type EventTimelineSet,
  type MatrixClient,
  type MatrixEvent,
  type Room,
} from 'matrix-js-sdk';
import type { Logger } from '../../base/log.js';
import type { MatrixConfig } from '../../config.js';
import { ApprovalUnavailableError } from '../gateway.js';
import { createBotClient } from './client.js';
import { MatrixGatewayError } from './errors.js';
import type { ResolvedOptions } from './options.js';
import { BotCrypto } from './e2ee/bot-crypto.js';
import { checkSyncedRoom, encryptionRequired, preflight } from './preflight.js';
import type { RoomWatch } from './room-watch.js';

export const UNAVAILABLE_MESSAGE = 'approval channel unavailable; existing grants still work';

export type TimelineHandler = (
  event: MatrixEvent,
  room: Room | undefined,
  toStartOfTimeline: boolean | undefined,
  removed: boolean,
  data: { liveEvent?: boolean },
) => void;

/**
 * The live timeline was reset (a `limited` sync: a gap). `token` points back before the
 * events that follow; null when there is none.
 */
export type GapHandler = (token: string | null) => void;

export interface ConnectionDeps {
  readonly cfg: MatrixConfig;
  readonly opts: ResolvedOptions;
  readonly logger: Logger;
  readonly room: RoomWatch;
  readonly onTimeline: TimelineHandler;
  /** A gap in the approval room's sync, after the first sync. */
  readonly onGap: GapHandler;
  /** Sync is back after an outage. */
  readonly onRecovered: () => void;
  /** Where the bot keeps its identity (needed with matrix.encryption: required). */
  readonly dataDir?: string | undefined;
}

export class MatrixConnection {
  #client: MatrixClient | undefined;
  /** The bot's encryption, with matrix.encryption: required. */
  #e2ee: BotCrypto | undefined;
  /** `waiting`: started without the homeserver (startWhileUnreachable), retrying. */
  #phase: 'new' | 'starting' | 'waiting' | 'started' | 'stopped' = 'new';
  #prepared = false;
  /** The current client synced and passed the room checks. */
  #ready = false;
  #nudgeTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelayMs = 0;
  #preparedWaiter: (() => void) | undefined;
  readonly #cfg: MatrixConfig;
  readonly #opts: ResolvedOptions;
  readonly #logger: Logger;
  readonly #room: RoomWatch;
  readonly #onTimeline: TimelineHandler;
  readonly #onGap: GapHandler;
  readonly #onRecovered: () => void;
  readonly #dataDir: string | undefined;

  constructor(deps: ConnectionDeps) {
    this.#dataDir = deps.dataDir;
    this.#cfg = deps.cfg;
    this.#opts = deps.opts;
    this.#logger = deps.logger;
    this.#room = deps.room;
    this.#onTimeline = deps.onTimeline;
    this.#onGap = deps.onGap;
    this.#onRecovered = deps.onRecovered;
  }

  get stopped(): boolean {
    return this.#phase === 'stopped';
  }

  /** Events arriving now are the re-delivered past: before the first sync is PREPARED. */
  replaying(): boolean {
    return !this.#prepared || this.#client?.getSyncState() === null;
  }

  /** Started, synced, the room checks passed and sync is not failing. */
  live(): boolean {
    if (this.#phase !== 'started' || !this.#ready || this.#client === undefined) return false;
    const state = this.#client.getSyncState();
    return !(state === null || state === SyncState.Error || state === SyncState.Stopped);
  }

  /** The bot's encryption, when matrix.encryption is required and the channel is up. */
  crypto(): BotCrypto | undefined {
    return this.#e2ee;
  }

  /** Fetches one event of the approval room (for a reaction on an older message). */
  async fetchEvent(eventId: string): Promise<Awaited<ReturnType<MatrixClient['fetchRoomEvent']>>> {
    if (this.#client === undefined) throw new Error('no client');
    return this.#client.fetchRoomEvent(this.#cfg.room_id, eventId);
  }

  /** One page of the approval room's history from `from`, as SDK events (decryption started). */
  async page(
    from: string,
    limit: number,
    dir: Direction,
  ): Promise<{ events: MatrixEvent[]; end: string | undefined }> {
    const client = this.#client;
    if (client === undefined) throw new Error('no client');
    const res = await client.createMessagesRequest(this.#cfg.room_id, from, limit, dir);
    const mapper = client.getEventMapper();
    return { events: res.chunk.map((raw) => mapper(raw)), end: res.end };
  }

  async start(): Promise<void> {
    if (this.#phase !== 'new') throw new Error(`MatrixGateway.start() in phase ${this.#phase}`);
    this.#phase = 'starting';
    try {
      await this.#connect();
    } catch (err) {
      const transient =
        err instanceof MatrixGatewayError &&
        (err.code === 'unreachable' || err.code === 'sync_timeout');
      if (this.#opts.startWhileUnreachable && transient && this.#phase === 'starting') {
        // Existing grants must keep working while the approval plane is down, so the
        // daemon may run without it; nothing is posted until the room checks pass.
        this.#phase = 'waiting';
        this.#retryDelayMs = Math.min(this.#opts.startRetryFirstMs, this.#opts.startRetryMs);
        this.#logger.warn(
          'starting without the Matrix approval channel; retrying in the background',
          { error: err.message, retry_ms: this.#retryDelayMs },
        );
        this.#scheduleRetry();
        return;
      }
      this.#phase = 'stopped';
      throw err;
    }
    this.#connected();
  }

  #scheduleRetry(): void {
    const delay = this.#retryDelayMs;
    // Quick first retries (a homeserver starting next to the broker), then back off.
    this.#retryDelayMs = Math.min(delay * 2, this.#opts.startRetryMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#connect().then(
        () => {
          if (this.#phase === 'waiting') this.#connected();
          else this.#teardown();
        },
        (err: unknown) => {
          if (this.#phase !== 'waiting') return;
          this.#logger.warn('the Matrix approval channel still cannot start', {
            code: err instanceof MatrixGatewayError ? err.code : 'unknown',
            error: err instanceof Error ? err.message : 'unknown error',
            retry_ms: this.#retryDelayMs,
          });
          this.#scheduleRetry();
        },
      );
    }, delay);
    this.#retryTimer.unref();
  }

  /** One attempt: a fresh client, preflight, first sync, synced-room checks. */
  async #connect(): Promise<void> {
    const logger = this.#logger;
    const e2ee = encryptionRequired(this.#cfg)
      ? await BotCrypto.open(this.#cfg, this.#dataDir, logger)
      : undefined;
    this.#e2ee = e2ee;
    const client = createBotClient(
      this.#cfg,
      e2ee === undefined
        ? this.#opts
        : { ...this.#opts, deviceId: e2ee.session.deviceId, accessToken: e2ee.session.accessToken },
      logger,
    );
    this.#client = client;
    this.#prepared = false;
    try {
      const { others } = await preflight(client, this.#cfg);
      if (e2ee === undefined) {
        logger.warn(
          "matrix.encryption is off: decisions in this clear-text room are only as trustworthy as the homeserver and every session of the approver's account",
        );
      } else await e2ee.init(client);
      if (others.length > 0) {
        logger.warn(
          'the approval room has other members: they can read every request, but only the approver can decide',
          { room: this.#cfg.room_id, others },
        );
      }
      client.on(ClientEvent.Sync, this.#onSync);
      client.on(RoomEvent.Timeline, this.#onTimeline);
      client.on(RoomEvent.TimelineReset, this.#onTimelineReset);
      const prepared = this.#waitForPrepared();
      // Awaited below; this only keeps a rejection during startClient from going unhandled.
      prepared.catch(() => undefined);
      await client.startClient({
        initialSyncLimit: this.#opts.initialSyncLimit,
        pollTimeout: this.#opts.pollTimeoutMs,
        lazyLoadMembers: false,
        disablePresence: true,
        threadSupport: false,
      });
      await prepared;
      checkSyncedRoom(client.getRoom(this.#cfg.room_id), this.#cfg.room_id, this.#cfg);
      await e2ee?.afterSync();
      this.#ready = true;
    } catch (err) {
      this.#teardown();
      throw err;
    }
  }

  #connected(): void {
    this.#phase = 'started';
    if (this.#opts.reconnectNudgeMs !== undefined) {
      this.#nudgeTimer = setInterval(() => this.#nudge(), this.#opts.reconnectNudgeMs);
      this.#nudgeTimer.unref();
    }
    this.#logger.info('matrix approval gateway started', {
      room: this.#cfg.room_id,
      bot: this.#cfg.bot_user,
      approver: this.#cfg.approver,
    });
  }

  /** Stops for good (a stopped connection is never started again). */
  stop(): void {
    if (this.#phase === 'stopped') return;
    this.#phase = 'stopped';
    this.#teardown();
  }

  #teardown(): void {
    this.#ready = false;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#nudgeTimer !== undefined) clearInterval(this.#nudgeTimer);
    this.#nudgeTimer = undefined;
    this.#preparedWaiter?.();
    this.#e2ee?.stop();
    const client = this.#client;
    if (client === undefined) return;
    client.off(ClientEvent.Sync, this.#onSync);
    client.off(RoomEvent.Timeline, this.#onTimeline);
    client.off(RoomEvent.TimelineReset, this.#onTimelineReset);
    client.stopClient();
  }

  #waitForPrepared(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#preparedWaiter = undefined;
        reject(
          new MatrixGatewayError(
            'sync_timeout',
            `no first sync from ${this.#cfg.homeserver} within ${Math.round(this.#opts.preparedTimeoutMs / 1000)} s; check that the homeserver is up and reachable`,
          ),
        );
      }, this.#opts.preparedTimeoutMs);
      this.#preparedWaiter = () => {
        clearTimeout(timer);
        this.#preparedWaiter = undefined;
        if (this.#prepared) resolve();
        else reject(new MatrixGatewayError('sync_timeout', 'stopped before the first sync'));
      };
    });
  }

  #nudge(): void {
    const state = this.#client?.getSyncState();
    if (state === SyncState.Error || state === SyncState.Reconnecting) {
      this.#client?.retryImmediately();
    }
  }

  /** The client, when requests may be posted; else why not, as ApprovalUnavailableError. */
  usableClient(): MatrixClient {
    if (this.#phase === 'stopped') {
      throw new ApprovalUnavailableError('stopped', 'approval channel stopped');
    }
    if (!this.#ready || this.#client === undefined) {
      if (this.#phase === 'waiting') {
        throw new ApprovalUnavailableError('unhealthy', UNAVAILABLE_MESSAGE);
      }
      throw new ApprovalUnavailableError('not_started', 'approval channel not started yet');
    }
    const problem = this.#room.problem();
    if (problem !== undefined) {
      throw new ApprovalUnavailableError('unhealthy', `${UNAVAILABLE_MESSAGE} (${problem})`);
    }
    if (this.#client.getSyncState() === SyncState.Error) this.#client.retryImmediately();
    return this.#client;
  }

  readonly #onTimelineReset = (
    room: Room | undefined,
    timelineSet: EventTimelineSet,
    _resetAll: boolean,
  ): void => {
    // Before the first sync there is nothing to read back: the past is never replayed.
    if (this.replaying() || room?.roomId !== this.#cfg.room_id) return;
    if (timelineSet !== room.getUnfilteredTimelineSet()) return;
    this.#onGap(timelineSet.getLiveTimeline().getPaginationToken(EventTimeline.BACKWARDS));
  };

  readonly #onSync = (state: SyncState, prev: SyncState | null): void => {
    if (state === SyncState.Prepared) {
      this.#prepared = true;
      this.#preparedWaiter?.();
    }
    if (state === prev) return;
    if (state === SyncState.Syncing) {
      // The connection is back: a send failure from the outage no longer says anything.
      this.#onRecovered();
    }
    if (state === SyncState.Error) {
      this.#logger.warn(
        'matrix sync is failing; the approval channel is unavailable until it recovers',
      );
    } else if (
      state === SyncState.Syncing &&
      (prev === SyncState.Error || prev === SyncState.Catchup || prev === SyncState.Reconnecting)
    ) {
      this.#logger.info('matrix sync recovered');
    }
  };
}
