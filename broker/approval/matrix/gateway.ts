/**
 * The Matrix approval gateway (docs/architecture.md): one room, one bot, one approver.
 *
 * Posts each request as one message with 👍 👎 🛇 📋 pre-placed (room-sender.ts), and
 * turns the approver's reactions, typed commands and withdrawn 👍 into engine calls,
 * answering each in the room (inbound.ts says what it refuses to act on, and why).
 * Expiry never uses the homeserver's timestamps: the engine and store use the broker's
 * clock (docs/contracts.md §3).
 *
 * With `matrix.encryption: required` (§11.1 of the design; docs/contracts.md) the room is
 * encrypted, each request carries a poll instead of reactions, and a typed command or a
 * vote counts only from one of the approver's pinned devices (e2ee/device-gate.ts);
 * reactions decide nothing there.
 *
 * Refuses to start unless the token is the bot's, the bot and the approver are joined,
 * the room is invite-only and encrypted exactly when required (preflight.ts). A homeserver that is merely
 * unreachable at start does not stop the broker: start() resolves with the channel
 * unavailable and keeps retrying (connection.ts). While the homeserver is unreachable
 * `healthy()` is false and `postRequest` throws ApprovalUnavailableError; once running,
 * matrix-js-sdk reconnects by itself (keep-alive with backoff).
 */
import { randomBytes } from 'node:crypto';
import type { RequestRecord } from '../../base/domain.js';
import { REACTION_KEYS } from '../emoji.js';
import type { ApprovalGateway } from '../gateway.js';
import { renderRequest } from '../request-message.js';
import { BoundedSet } from './bounded-set.js';
import type { EventContent } from './client.js';
import { MatrixConnection, UNAVAILABLE_MESSAGE } from './connection.js';
import { CountedMessages, MemoryCountedMessages } from './counted-messages.js';
import { DeviceGate } from './e2ee/device-gate.js';
import { RefusedDecisions } from './e2ee/refused-decisions.js';
import { EncryptedDecisions } from './encrypted-decisions.js';
import { MatrixGatewayError } from './errors.js';
import type { MatrixGatewayDeps } from './gateway-deps.js';
import type { Reply } from '../reply.js';
import { GapReader } from './gap-reader.js';
import { Inbound } from './inbound.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { newNonce, pollContent, POLL_START } from './poll.js';
import { MemoryPollNonces, PollNonces, type PollNonceStore } from './poll-nonces.js';
import { encryptionRequired } from './preflight.js';
import { REQUEST_ID_KEY, RequestIndex, STORE_ID_KEY } from './request-index.js';
import { RoomSender } from './room-sender.js';
import { RoomWatch } from './room-watch.js';
import { routeSdkGlobalLogs } from './sdk-log.js';

export { REQUEST_ID_KEY, STORE_ID_KEY, UNAVAILABLE_MESSAGE };
export type { MatrixGatewayOptions } from './options.js';

export type { HandledEvent, MatrixEngine, MatrixGatewayDeps } from './gateway-deps.js';

export class MatrixGateway implements ApprovalGateway {
  readonly #opts: ResolvedOptions;
  readonly #connection: MatrixConnection;
  readonly #requests: RequestIndex;
  readonly #room: RoomWatch;
  readonly #encrypted: boolean;
  readonly #sender: RoomSender;
  readonly #inbound: Inbound;
  readonly #polls: PollNonceStore;
  readonly #deps: MatrixGatewayDeps;

  constructor(deps: MatrixGatewayDeps) {
    this.#deps = deps;
    if (deps.config.matrix === undefined) {
      throw new MatrixGatewayError('bad_response', 'matrix: is missing from the configuration');
    }
    const cfg = deps.config.matrix;
    this.#opts = resolveOptions(deps.options);
    this.#room = new RoomWatch(cfg, deps.logger);
    this.#encrypted = encryptionRequired(cfg);
    this.#connection = new MatrixConnection({
      dataDir: deps.dataDir,
      cfg,
      opts: this.#opts,
      logger: deps.logger,
      room: this.#room,
      onTimeline: (...args) => this.#inbound.onTimeline(...args),
      onGap: (token) => this.#inbound.onGap(token),
      onRecovered: () => this.#sender.recovered(),
    });
    this.#sender = new RoomSender({
      roomId: cfg.room_id,
      connection: this.#connection,
      logger: deps.logger,
      now: deps.now,
    });
    this.#requests = new RequestIndex({
      bot: cfg.bot_user,
      storeId: deps.engine.storeId,
      limit: this.#opts.handledLimit,
      logger: deps.logger,
      fetchEvent: (eventId) => this.#connection.fetchEvent(eventId),
    });
    const database = deps.engine.database;
    this.#polls = database === undefined ? new MemoryPollNonces() : new PollNonces(database);
    const reply = (r: Reply, inReplyTo: string) => this.#sender.reply(r, inReplyTo);
    const refusals = new RefusedDecisions({
      approver: cfg.approver,
      logger: deps.logger,
      audit: deps.audit,
      reply,
      toldLimit: this.#opts.handledLimit,
    });
    const handled = new BoundedSet(this.#opts.handledLimit);
    this.#inbound = new Inbound({
      cfg,
      encrypted: this.#encrypted,
      connection: this.#connection,
      handled,
      requests: this.#requests,
      room: this.#room,
      encryptedDecisions: new EncryptedDecisions({
        approver: cfg.approver,
        gate: new DeviceGate({ crypto: () => this.#connection.crypto(), logger: deps.logger }),
        refusals,
        counted:
          database === undefined ? new MemoryCountedMessages() : new CountedMessages(database),
        polls: this.#polls,
        requests: this.#requests,
        engine: deps.engine,
        reply,
      }),
      refusals,
      sender: this.#sender,
      gap: new GapReader({
        page: (from, limit, dir) => this.#connection.page(from, limit, dir),
        handled: (eventId) => handled.has(eventId),
        limit: this.#opts.gapReadLimit,
        logger: deps.logger,
      }),
      gateway: deps,
    });
  }

  // --- lifecycle -------------------------------------------------------------------

  async start(): Promise<void> {
    routeSdkGlobalLogs(this.#deps.logger);
    await this.#connection.start();
  }

  async stop(): Promise<void> {
    if (this.#connection.stopped) return;
    this.#connection.stop();
    await this.#inbound.drained();
  }

  // --- health ----------------------------------------------------------------------

  healthy(): boolean {
    if (!this.#connection.live()) return false;
    if (this.#room.problem() !== undefined) return false;
    return !this.#sender.failedWithin(this.#opts.sendFailureWindowMs);
  }

  // --- sending ---------------------------------------------------------------------

  async postRequest(request: RequestRecord): Promise<void> {
    const { lifecycle } = this.#deps.config;
    const storeId = this.#deps.engine.storeId;
    const rendered = renderRequest(request, {
      expiresIn: request.createdAt + lifecycle.pending_timeout - this.#deps.now(),
      defaultGrant: lifecycle.default_grant,
      maxGrant: lifecycle.max_grant,
    });
    const eventId = await this.#sender.send(
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
    this.#requests.posted(eventId, request.id);
    if (this.#encrypted) {
      await this.#postPoll(request.id);
      return;
    }
    // The reactions are a convenience: typed commands work without them.
    for (const key of REACTION_KEYS) {
      try {
        await this.#sender.send(
          'm.reaction',
          { 'm.relates_to': { rel_type: 'm.annotation', event_id: eventId, key } },
          'reaction',
        );
      } catch {
        break;
      }
    }
  }

  /**
   * Encrypted room: reactions travel unencrypted and decide nothing, so a poll is the
   * one tap. Its answers carry the request's nonce, kept before the poll is sent.
   */
  async #postPoll(requestId: number): Promise<void> {
    const nonce = newNonce(this.#deps.randomBytes ?? randomBytes);
    this.#polls.create(requestId, nonce);
    let pollId: string;
    try {
      pollId = await this.#sender.send(POLL_START, pollContent(requestId, nonce), 'poll');
    } catch {
      // Already logged; typed commands work without the poll.
      return;
    }
    if (!this.#polls.posted(requestId, pollId)) {
      // Security: an id the homeserver gave before is not this poll's; a vote is bound
      // by its answer anyway, and no relation naming that id counts for this request.
      this.#deps.logger.error(
        "the homeserver answered a poll's send with the event id of another; votes are bound by their answers",
        { request: requestId },
      );
    }
  }

  async announce(text: string, html?: string): Promise<void> {
    const content: EventContent = { msgtype: 'm.notice', body: text };
    if (html !== undefined) {
      content['format'] = 'org.matrix.custom.html';
      content['formatted_body'] = html;
    }
    await this.#sender.send('m.room.message', content, 'announce');
  }
}
