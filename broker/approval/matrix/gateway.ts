/**
 * The Matrix approval gateway (docs/architecture.md): one room, one bot, one approver.
 *
 * Posts each request as one message with 👍 👎 🛇 📋 pre-placed, and turns the
 * approver's reactions, typed commands and withdrawn 👍 into engine calls, answering
 * each in the room. What it refuses to act on, and why:
 * - anything before the first sync is PREPARED: after a restart the SDK re-delivers
 *   old events as "live" during the initial sync (matrix-js-sdk 43); replaying an old
 *   `revoke all` or 👍 would be a decision nobody made now;
 * - an event id already handled (bounded memory);
 * - other senders, other rooms, edits, notices, reactions on messages the bot did not
 *   post as a request (see classify.ts).
 * Expiry never uses the homeserver's timestamps: the engine and store use the
 * broker's clock (docs/contracts.md §3).
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
import type { MatrixEvent } from 'matrix-js-sdk';
import type { RequestRecord } from '../../base/domain.js';
import type { MatrixConfig } from '../../config.js';
import type { Reply } from '../decisions.js';
import { normaliseEmoji, REACTION_KEYS } from '../emoji.js';
import { ApprovalUnavailableError, type ApprovalGateway } from '../gateway.js';
import { parseCommand } from '../parser.js';
import { renderRequest } from '../request-message.js';
import { BoundedSet } from './bounded-set.js';
import { classify, type Classified, type IncomingEvent } from './classify.js';
import { errorSummary, sendContent, type EventContent } from './client.js';
import { MatrixConnection, UNAVAILABLE_MESSAGE, type TimelineHandler } from './connection.js';
import { DeviceGate, reactionNotice } from './e2ee/device-gate.js';
import { MatrixGatewayError } from './errors.js';
import type { HandledEvent, MatrixGatewayDeps } from './gateway-deps.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { pollContent, POLL_START } from './poll.js';
import { encryptionRequired } from './preflight.js';
import { REQUEST_ID_KEY, RequestIndex, STORE_ID_KEY } from './request-index.js';
import { RoomWatch } from './room-watch.js';
import { routeSdkGlobalLogs } from './sdk-log.js';

export { REQUEST_ID_KEY, STORE_ID_KEY, UNAVAILABLE_MESSAGE };
export type { MatrixGatewayOptions } from './options.js';

export type { HandledEvent, MatrixEngine, MatrixGatewayDeps } from './gateway-deps.js';

export class MatrixGateway implements ApprovalGateway {
  readonly #cfg: MatrixConfig;
  readonly #opts: ResolvedOptions;
  readonly #connection: MatrixConnection;
  readonly #handled: BoundedSet;
  readonly #requests: RequestIndex;
  readonly #room: RoomWatch;
  readonly #encrypted: boolean;
  readonly #gate: DeviceGate;
  readonly #deps: MatrixGatewayDeps;
  #lastSendFailureAt: number | undefined;
  #work: Promise<void> = Promise.resolve();

  constructor(deps: MatrixGatewayDeps) {
    this.#deps = deps;
    if (deps.config.matrix === undefined) {
      throw new MatrixGatewayError('bad_response', 'matrix: is missing from the configuration');
    }
    this.#cfg = deps.config.matrix;
    this.#opts = resolveOptions(deps.options);
    this.#handled = new BoundedSet(this.#opts.handledLimit);
    this.#room = new RoomWatch(this.#cfg, deps.logger);
    this.#encrypted = encryptionRequired(this.#cfg);
    this.#connection = new MatrixConnection({
      dataDir: deps.dataDir,
      cfg: this.#cfg,
      opts: this.#opts,
      logger: deps.logger,
      room: this.#room,
      onTimeline: this.#onTimeline,
      onRecovered: () => (this.#lastSendFailureAt = undefined),
    });
    this.#gate = new DeviceGate({
      crypto: () => this.#connection.crypto(),
      approver: this.#cfg.approver,
      logger: deps.logger,
      audit: deps.audit,
    });
    this.#requests = new RequestIndex({
      bot: this.#cfg.bot_user,
      storeId: deps.engine.storeId,
      limit: this.#opts.handledLimit,
      logger: deps.logger,
      fetchEvent: (eventId) => this.#connection.fetchEvent(eventId),
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
    await this.#work;
  }

  // --- health ----------------------------------------------------------------------

  healthy(): boolean {
    if (!this.#connection.live()) return false;
    if (this.#room.problem() !== undefined) return false;
    if (
      this.#lastSendFailureAt !== undefined &&
      this.#deps.now() - this.#lastSendFailureAt < this.#opts.sendFailureWindowMs
    ) {
      return false;
    }
    return true;
  }

  // --- sending ---------------------------------------------------------------------

  async #send(type: string, content: EventContent, what: string): Promise<string> {
    const client = this.#connection.usableClient();
    // Security: a message of the bot mentions no one. An empty `m.mentions` tells
    // homeservers and clients (Matrix 1.7+) so, which turns off the legacy rules that
    // notify on a name, a user ID or `@room` anywhere in the body, where agent text is.
    const sent = type === 'm.room.message' ? { ...content, 'm.mentions': {} } : content;
    try {
      const eventId = await sendContent(client, this.#cfg.room_id, type, sent);
      this.#lastSendFailureAt = undefined;
      return eventId;
    } catch (err) {
      this.#lastSendFailureAt = this.#deps.now();
      this.#deps.logger.warn('matrix send failed', { what, error: errorSummary(err) });
      throw new ApprovalUnavailableError('send_failed', UNAVAILABLE_MESSAGE, { cause: err });
    }
  }

  async postRequest(request: RequestRecord): Promise<void> {
    const { lifecycle } = this.#deps.config;
    const storeId = this.#deps.engine.storeId;
    const rendered = renderRequest(request, {
      expiresIn: request.createdAt + lifecycle.pending_timeout - this.#deps.now(),
      defaultGrant: lifecycle.default_grant,
      maxGrant: lifecycle.max_grant,
    });
    const eventId = await this.#send(
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
      // Reactions travel unencrypted and decide nothing here; a poll is the one tap.
      try {
        const pollId = await this.#send(POLL_START, pollContent(request.id), 'poll');
        this.#requests.posted(pollId, request.id);
      } catch {
        // Already logged; typed commands work without the poll.
      }
      return;
    }
    // The reactions are a convenience: typed commands work without them.
    for (const key of REACTION_KEYS) {
      try {
        await this.#send(
          'm.reaction',
          { 'm.relates_to': { rel_type: 'm.annotation', event_id: eventId, key } },
          'reaction',
        );
      } catch {
        break;
      }
    }
  }

  async announce(text: string, html?: string): Promise<void> {
    const content: EventContent = { msgtype: 'm.notice', body: text };
    if (html !== undefined) {
      content['format'] = 'org.matrix.custom.html';
      content['formatted_body'] = html;
    }
    await this.#send('m.room.message', content, 'announce');
  }

  /** The reply, then its continuation messages (a long `show N`), in order. */
  async #reply(reply: Reply, inReplyTo: string | undefined): Promise<void> {
    const parts = [{ plain: reply.text, html: reply.html }, ...(reply.continued ?? [])];
    for (const part of parts) {
      const content: EventContent = {
        msgtype: 'm.notice',
        body: part.plain,
        format: 'org.matrix.custom.html',
        formatted_body: part.html,
      };
      if (inReplyTo !== undefined)
        content['m.relates_to'] = { 'm.in_reply_to': { event_id: inReplyTo } };
      try {
        await this.#send('m.room.message', content, 'reply');
      } catch {
        // Already logged; the decision stands and `status` shows it. A later part
        // without the earlier one would mislead, so stop here.
        return;
      }
    }
  }

  // --- receiving -------------------------------------------------------------------

  readonly #onTimeline: TimelineHandler = (
    event,
    _room,
    toStartOfTimeline,
    removed,
    data,
  ): void => {
    if (toStartOfTimeline === true || removed || data.liveEvent !== true) return;
    const id = event.getId();
    // Local echoes of the bot's own sends carry no server id yet.
    if (id === undefined || event.status !== null) return;
    // Security: no replay. Events delivered before the first sync is PREPARED are the
    // re-delivered past (getSyncState() is null then); remember them, never act on them.
    if (this.#connection.replaying()) {
      this.#handled.add(id);
      return;
    }
    // Security: each event acts at most once.
    if (!this.#handled.add(id)) return;
    // One at a time, in timeline order: a 👍 and its withdrawal must not overtake each other.
    this.#work = this.#work
      .then(() => this.#handleSdkEvent(event, id))
      .catch((err: unknown) => {
        this.#deps.logger.error('handling a matrix event failed', { error: errorSummary(err) });
      });
  };

  async #handleSdkEvent(event: MatrixEvent, id: string): Promise<void> {
    if (this.#encrypted && event.isEncrypted()) {
      await this.#connection.crypto()?.decrypt(event);
      if (event.isDecryptionFailure()) {
        if (event.getSender() !== this.#cfg.bot_user) await this.#gate.undecryptable(event);
        this.#deps.onHandled?.({ eventId: id, kind: 'refused_device' });
        return;
      }
    }
    const raw = event.event;
    await this.#handle(
      {
        eventId: id,
        roomId: event.getRoomId(),
        sender: event.getSender(),
        type: event.getType(),
        // The clear content of a decrypted event; the wire content otherwise.
        content: event.isEncrypted() ? event.getContent() : raw.content,
        redacts: typeof raw.redacts === 'string' ? raw.redacts : undefined,
        stateKey: event.getStateKey(),
      },
      event,
    );
  }

  async #handle(ev: IncomingEvent, event: MatrixEvent): Promise<void> {
    if (this.#connection.stopped) return;
    const c = classify(ev, {
      roomId: this.#cfg.room_id,
      approver: this.#cfg.approver,
      bot: this.#cfg.bot_user,
    });
    const done = (kind: HandledEvent['kind'], reply?: Reply): void =>
      this.#deps.onHandled?.({ eventId: ev.eventId, kind, ...(reply ? { reply } : {}) });
    const actor = this.#cfg.approver;
    switch (c.kind) {
      case 'ignore':
        return done('ignore');
      case 'membership':
        this.#room.onMembership(c.userId, c.membership);
        return done('membership');
      case 'room_state':
        this.#room.onRoomState(c.stateType, c.content);
        return done('room_state');
      case 'stranger':
        await this.#onStranger(ev, c);
        return done('stranger');
      case 'reaction': {
        const requestId = await this.#requests.requestOf(c.target);
        if (requestId === undefined) return done('unknown_target');
        if (this.#encrypted) {
          // Security: Matrix sends reactions unencrypted, so the homeserver or any
          // session of the account could have made one; it decides nothing here.
          if (!REACTION_KEYS.includes(normaliseEmoji(c.key))) return done('not_a_command');
          const notice = reactionNotice(requestId);
          await this.#reply(notice, c.target);
          return done('reaction_refused', notice);
        }
        // The engine records a 👍 that granted something (in the grant store), so that
        // withdrawing it undoes the approval, after a restart too (docs/architecture.md).
        const reply = await this.#deps.engine.handleReaction(c.key, requestId, actor, {
          eventId: ev.eventId,
          roomId: this.#cfg.room_id,
        });
        if (reply === null) return done('not_a_command');
        await this.#reply(reply, c.target);
        return done('reaction', reply);
      }
      case 'vote': {
        const requestId = await this.#requests.requestOf(c.poll);
        // Clear-text rooms get no polls, so a vote there answers nothing of ours.
        if (requestId === undefined || !this.#encrypted) return done('unknown_target');
        if (!(await this.#passesGate(event, 'vote', requestId))) return done('refused_device');
        if (c.answer === undefined) return done('not_a_command');
        const reply = await this.#deps.engine.handleText(`${c.answer} ${requestId}`, actor);
        if (reply === null) return done('not_a_command');
        await this.#reply(reply, ev.eventId);
        return done('vote', reply);
      }
      case 'text': {
        if (this.#encrypted) {
          const parsed = parseCommand(c.body);
          if (parsed === null) return done('not_a_command');
          const command = parsed.ok ? (parsed.command as { request?: unknown }) : {};
          const requestId = typeof command.request === 'number' ? command.request : undefined;
          if (!(await this.#passesGate(event, 'text', requestId))) return done('refused_device');
        }
        const reply = await this.#deps.engine.handleText(c.body, actor);
        if (reply === null) return done('not_a_command');
        await this.#reply(reply, ev.eventId);
        return done('text', reply);
      }
      case 'redaction': {
        // In an encrypted room no 👍 ever approved anything, so none can be withdrawn.
        if (this.#encrypted) return done('ignore');
        // Security: classify() passes only the approver's own redactions in this room
        // (a moderator removing the approver's 👍 is not the approver withdrawing it);
        // the store also requires the redacting approver and room to be the 👍's own,
        // and undoes each 👍 at most once.
        const reply = await this.#deps.engine.undoApprovalReaction(
          { eventId: c.target, roomId: this.#cfg.room_id },
          actor,
        );
        if (reply === null) return done('unknown_target');
        await this.#reply(reply, undefined);
        return done('redaction', reply);
      }
    }
  }

  /** Encrypted room: the event came from a pinned device; else audited (and reported). */
  async #passesGate(
    event: MatrixEvent,
    what: 'text' | 'vote',
    requestId: number | undefined,
  ): Promise<boolean> {
    const result = await this.#gate.check(event, what, requestId);
    if (!result.ok && result.notice !== undefined) await this.#reply(result.notice, event.getId());
    return result.ok;
  }

  async #onStranger(
    ev: IncomingEvent,
    c: Extract<Classified, { kind: 'stranger' }>,
  ): Promise<void> {
    if (!c.commandLike) return;
    // Security: the stranger is told nothing; the owner can see the attempt in the log
    // and the audit trail.
    this.#deps.logger.warn('ignored a command from someone who is not the approver', {
      sender: c.sender,
      what: c.what,
    });
    try {
      await this.#deps.audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: c.sender,
        reason: 'not_approver',
        what: c.what,
        event_id: ev.eventId,
      });
    } catch (err) {
      this.#deps.logger.error('audit append failed', { error: errorSummary(err) });
    }
  }
}
