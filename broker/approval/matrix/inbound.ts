/**
 * The approval room's events in, engine calls out: each live timeline event is handled
 * once, one at a time in timeline order, and answered in the room. What it refuses to
 * act on, and why:
 * - anything before the first sync is PREPARED: after a restart the SDK re-delivers
 *   old events as "live" during the initial sync (matrix-js-sdk 43); replaying an old
 *   `revoke all` or 👍 would be a decision nobody made now;
 * - an event id already handled (bounded memory);
 * A gap in the sync (a `limited` timeline) is read back first (gap-reader.ts), so no
 * decision in it is lost; one that cannot be read back is reported to the owner.
 * - other senders, other rooms, edits, notices, reactions on messages the bot did not
 *   post as a request (see classify.ts);
 * - with `matrix.encryption: required`, whatever encrypted-decisions.ts refuses: a
 *   command, vote or edit not from a pinned device, counted before, or (a vote) bound to
 *   no poll of this request; every edit; every reaction.
 * Words are always the event's own (own-content.ts), never those of an edit of it.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import type { MatrixConfig } from '../../config.js';
import type { BoundedSet } from './bounded-set.js';
import { classify, type Classified, type IncomingEvent } from './classify.js';
import { errorSummary } from './client.js';
import type { GapHandler, MatrixConnection, TimelineHandler } from './connection.js';
import type { RefusedDecisions } from './e2ee/refused-decisions.js';
import type { EncryptedDecisions, Outcome } from './encrypted-decisions.js';
import type { GapReader } from './gap-reader.js';
import type { MatrixGatewayDeps } from './gateway-deps.js';
import { ownContent } from './own-content.js';
import type { RequestIndex } from './request-index.js';
import type { RoomSender } from './room-sender.js';
import type { RoomWatch } from './room-watch.js';

export interface InboundDeps {
  readonly cfg: MatrixConfig;
  readonly encrypted: boolean;
  readonly connection: Pick<MatrixConnection, 'replaying' | 'crypto' | 'stopped'>;
  readonly handled: BoundedSet;
  readonly requests: RequestIndex;
  readonly room: RoomWatch;
  /** The rules of an encrypted room (used with matrix.encryption: required). */
  readonly encryptedDecisions: EncryptedDecisions;
  readonly refusals: Pick<RefusedDecisions, 'undecryptable'>;
  readonly sender: Pick<RoomSender, 'reply' | 'send'>;
  readonly gap: GapReader;
  readonly gateway: Pick<MatrixGatewayDeps, 'engine' | 'logger' | 'audit' | 'onHandled'>;
}

/** What the owner is told when a gap in the sync could not be read back. */
export const GAP_NOTICE =
  'The bot missed part of this room (a gap in its sync it could not read back): decisions sent in the last minutes may not have reached it. Type "status", and send again any decision that did not take effect.';

export class Inbound {
  #work: Promise<void> = Promise.resolve();
  readonly #deps: InboundDeps;

  constructor(deps: InboundDeps) {
    this.#deps = deps;
  }

  /** Resolves when every event taken so far has been handled. */
  drained(): Promise<void> {
    return this.#work;
  }

  readonly onTimeline: TimelineHandler = (event, _room, toStartOfTimeline, removed, data): void => {
    if (toStartOfTimeline === true || removed || data.liveEvent !== true) return;
    const id = event.getId();
    // Local echoes of the bot's own sends carry no server id yet.
    if (id === undefined || event.status !== null) return;
    // Security: no replay. Events delivered before the first sync is PREPARED are the
    // re-delivered past (getSyncState() is null then); remember them, never act on them.
    if (this.#deps.connection.replaying()) {
      this.#deps.handled.add(id);
      return;
    }
    this.#take(event, id);
  };

  /**
   * A gap: the events after it arrive next (and queue behind this), so read it back
   * first, in order. Security: a decision lost to a gap is a decision nobody counted.
   */
  readonly onGap: GapHandler = (token): void => {
    this.#queue(async () => {
      const missed = token === null ? undefined : await this.#deps.gap.read(token);
      if (missed === undefined) {
        await this.#tellOwner(GAP_NOTICE);
        return;
      }
      for (const event of missed) {
        const id = event.getId();
        if (id !== undefined && this.#deps.handled.add(id)) await this.#handleSdkEvent(event, id);
      }
    });
  };

  #take(event: MatrixEvent, id: string): void {
    // Security: each event acts at most once.
    if (!this.#deps.handled.add(id)) return;
    this.#queue(() => this.#handleSdkEvent(event, id));
  }

  /** One at a time, in timeline order: a 👍 and its withdrawal must not overtake each other. */
  #queue(task: () => Promise<void>): void {
    this.#work = this.#work.then(task).catch((err: unknown) => {
      this.#deps.gateway.logger.error('handling a matrix event failed', {
        error: errorSummary(err),
      });
    });
  }

  async #tellOwner(text: string): Promise<void> {
    try {
      await this.#deps.sender.send('m.room.message', { msgtype: 'm.notice', body: text }, 'gap');
    } catch {
      // Already logged.
    }
  }

  async #handleSdkEvent(event: MatrixEvent, id: string): Promise<void> {
    const { cfg, encrypted } = this.#deps;
    if (encrypted && event.isEncrypted()) {
      await this.#deps.connection.crypto()?.decrypt(event);
      if (event.isDecryptionFailure()) {
        if (event.getSender() !== cfg.bot_user) {
          await this.#deps.refusals.undecryptable(id, event.getSender());
        }
        this.#deps.gateway.onHandled?.({ eventId: id, kind: 'refused_device' });
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
        // Security: the event's own words (its decrypted payload, or its content as
        // received), never an edit's that the SDK put in their place.
        content: ownContent(event),
        redacts: typeof raw.redacts === 'string' ? raw.redacts : undefined,
        stateKey: event.getStateKey(),
      },
      event,
    );
  }

  async #handle(ev: IncomingEvent, event: MatrixEvent): Promise<void> {
    if (this.#deps.connection.stopped) return;
    const { cfg, encrypted } = this.#deps;
    const c = classify(ev, {
      roomId: cfg.room_id,
      approver: cfg.approver,
      bot: cfg.bot_user,
      relationsFromServer: encrypted,
    });
    const outcome = await this.#outcome(c, ev, event);
    this.#deps.gateway.onHandled?.({
      eventId: ev.eventId,
      kind: outcome.kind,
      ...(outcome.reply ? { reply: outcome.reply } : {}),
    });
  }

  async #outcome(c: Classified, ev: IncomingEvent, event: MatrixEvent): Promise<Outcome> {
    const { cfg, encrypted, gateway, sender } = this.#deps;
    const rules = this.#deps.encryptedDecisions;
    const actor = cfg.approver;
    switch (c.kind) {
      case 'ignore':
        return { kind: 'ignore' };
      case 'membership':
        this.#deps.room.onMembership(c.userId, c.membership);
        return { kind: 'membership' };
      case 'room_state':
        this.#deps.room.onRoomState(c.stateType, c.content);
        return { kind: 'room_state' };
      case 'stranger':
        await this.#onStranger(ev, c);
        return { kind: 'stranger' };
      case 'edit':
        // In a clear-text room an edit is ignored like chatter (docs/contracts.md).
        return encrypted ? rules.edit(event, ev.eventId, c) : { kind: 'ignore' };
      case 'reaction': {
        if (encrypted) return rules.reaction(c.target, c.key);
        const requestId = await this.#deps.requests.requestOf(c.target);
        if (requestId === undefined) return { kind: 'unknown_target' };
        // The engine records a 👍 that granted something (in the grant store), so that
        // withdrawing it undoes the approval, after a restart too (docs/architecture.md).
        const reply = await gateway.engine.handleReaction(c.key, requestId, actor, {
          eventId: ev.eventId,
          roomId: cfg.room_id,
        });
        if (reply === null) return { kind: 'not_a_command' };
        await sender.reply(reply, c.target);
        return { kind: 'reaction', reply };
      }
      case 'vote':
        // Clear-text rooms get no polls, so a vote there answers nothing of ours.
        return encrypted ? rules.vote(event, ev.eventId, c) : { kind: 'unknown_target' };
      case 'text': {
        if (encrypted) return rules.text(event, ev.eventId, c.body);
        const reply = await gateway.engine.handleText(c.body, actor);
        if (reply === null) return { kind: 'not_a_command' };
        await sender.reply(reply, ev.eventId);
        return { kind: 'text', reply };
      }
      case 'redaction': {
        // In an encrypted room no 👍 ever approved anything, so none can be withdrawn.
        if (encrypted) return { kind: 'ignore' };
        // Security: classify() passes only the approver's own redactions in this room
        // (a moderator removing the approver's 👍 is not the approver withdrawing it);
        // the store also requires the redacting approver and room to be the 👍's own,
        // and undoes each 👍 at most once.
        const reply = await gateway.engine.undoApprovalReaction(
          { eventId: c.target, roomId: cfg.room_id },
          actor,
        );
        if (reply === null) return { kind: 'unknown_target' };
        await sender.reply(reply, undefined);
        return { kind: 'redaction', reply };
      }
    }
  }

  async #onStranger(
    ev: IncomingEvent,
    c: Extract<Classified, { kind: 'stranger' }>,
  ): Promise<void> {
    if (!c.commandLike) return;
    const { logger, audit } = this.#deps.gateway;
    // Security: the stranger is told nothing; the owner can see the attempt in the log
    // and the audit trail.
    logger.warn('ignored a command from someone who is not the approver', {
      sender: c.sender,
      what: c.what,
    });
    try {
      await audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: c.sender,
        reason: 'not_approver',
        what: c.what,
        event_id: ev.eventId,
      });
    } catch (err) {
      logger.error('audit append failed', { error: errorSummary(err) });
    }
  }
}
