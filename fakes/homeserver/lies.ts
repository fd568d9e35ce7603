/**
 * The fake homeserver's hostile mode: what a homeserver can do to an end-to-end
 * encrypted room without any key, driven by the tests. Everything a server writes is
 * in reach: event ids (in sync and in the answer to a client's own send), which events
 * it serves and when, `unsigned`, and the clear `m.relates_to` that the spec keeps
 * outside the ciphertext of an `m.room.encrypted` event. It cannot make a ciphertext:
 * it can only store, re-send, withhold and dress up the ones clients gave it.
 *
 * Nothing here runs unless a test asks; without it the fake is an honest server.
 */
import type { E2eeState } from './e2ee-state.js';
import type { HomeserverModel, MatrixEvent } from './model.js';

type Json = Record<string, unknown>;

/** How the next send that matches is answered. */
export interface SendLie {
  /** Answer with this event id instead of the stored event's own. */
  readonly answerWith?: string;
  /** Store the event but serve it to nobody (until `release`). */
  readonly withhold?: boolean;
}

interface PendingSendLie extends SendLie {
  readonly userId: string;
  readonly type: string | undefined;
  /** Resolves with the id the event really got. */
  readonly stored: (eventId: string) => void;
}

export class Lies {
  readonly #model: HomeserverModel;
  readonly #e2ee: E2eeState;
  /** Target event id → the edit served bundled in its `unsigned`. */
  readonly #bundled = new Map<string, MatrixEvent>();
  readonly #sendLies: PendingSendLie[] = [];

  constructor(model: HomeserverModel, e2ee: E2eeState) {
    this.#model = model;
    this.#e2ee = e2ee;
  }

  /**
   * Gives `deviceId` of `userId` to a new session: its old keys are forgotten and its
   * old access token no longer works, and whoever holds the new token uploads new keys
   * under that device id. Returns the new session's token.
   */
  replaceDevice(userId: string, deviceId: string): { deviceId: string; token: string } {
    const session = this.#e2ee.createSession(userId, { deviceId });
    session.keys = undefined;
    session.oneTimeKeys.clear();
    session.fallbackKeys.clear();
    this.#e2ee.changed(userId);
    return { deviceId, token: session.token };
  }

  /**
   * Serves `targetEventId`, wherever it is served, with `edit` bundled as its
   * replacement (`unsigned["m.relations"]["m.replace"]`): any sender, any type, clear
   * text or a stored ciphertext, whether or not it was ever sent.
   */
  bundleEdit(
    targetEventId: string,
    edit: { sender: string; type: string; content: Json } | string,
  ): MatrixEvent {
    const target = this.#mustExist(targetEventId);
    const event: MatrixEvent =
      typeof edit === 'string'
        ? structuredClone(this.#mustExist(edit))
        : {
            event_id: `$edit_${this.#bundled.size + 1}_${targetEventId.slice(1, 9)}`,
            room_id: target.room_id,
            sender: edit.sender,
            type: edit.type,
            content: structuredClone(edit.content),
            origin_server_ts: target.origin_server_ts + 1,
            unsigned: {},
          };
    this.#bundled.set(targetEventId, event);
    return event;
  }

  /** The edit a lie bundles with `eventId`, if any. */
  bundledEdit(eventId: string): MatrixEvent | undefined {
    return this.#bundled.get(eventId);
  }

  /**
   * Re-sends a stored event under a new event id: the same sender, type and content
   * (a ciphertext as it is), now. `relatesTo` replaces its clear `m.relates_to` (null
   * removes it); `rewrite` changes any other clear field (say, base64 padding added to a
   * ciphertext, which decodes to the same bytes).
   */
  resend(
    eventId: string,
    opts: { relatesTo?: Json | null; rewrite?: (content: Json) => Json } = {},
  ): string {
    const original = this.#mustExist(eventId);
    let content = structuredClone(original.content);
    if (opts.relatesTo === null) delete content['m.relates_to'];
    else if (opts.relatesTo !== undefined)
      content['m.relates_to'] = structuredClone(opts.relatesTo);
    if (opts.rewrite !== undefined) content = opts.rewrite(content);
    return this.#model.append({
      room_id: original.room_id,
      sender: original.sender,
      type: original.type,
      content,
      ...(original.state_key === undefined ? {} : { state_key: original.state_key }),
    }).event_id;
  }

  /**
   * Serves a made-up event under an existing id from now on (wherever that id is
   * looked up or synced again): any sender, the bot's included, in clear text.
   */
  forge(eventId: string, made: { sender: string; type: string; content: Json }): void {
    const event = this.#mustExist(eventId);
    event.sender = made.sender;
    event.type = made.type;
    event.content = structuredClone(made.content);
  }

  /**
   * Adds, rewrites or (null) removes the clear `m.relates_to` of a stored event, as
   * served from now on. For an `m.room.encrypted` event this is the copy outside the
   * ciphertext; what the ciphertext holds is out of reach.
   */
  rewriteRelation(eventId: string, relatesTo: Json | null): void {
    const event = this.#mustExist(eventId);
    if (relatesTo === null) delete event.content['m.relates_to'];
    else event.content['m.relates_to'] = structuredClone(relatesTo);
  }

  /**
   * The next send by `userId` (of `type`, when given) is answered as `lie` says.
   * Resolves with the event id the event really got.
   */
  nextSend(userId: string, lie: SendLie, type?: string): Promise<string> {
    return new Promise((resolve) => {
      this.#sendLies.push({ ...lie, userId, type, stored: resolve });
    });
  }

  /** The lie for this send, if one waits (taken: it is used once). */
  takeSendLie(userId: string, type: string): PendingSendLie | undefined {
    const i = this.#sendLies.findIndex(
      (l) => l.userId === userId && (l.type === undefined || l.type === type),
    );
    if (i < 0) return undefined;
    return this.#sendLies.splice(i, 1)[0];
  }

  /** Drops an event: stored, but served to nobody from now on. */
  withhold(eventId: string): void {
    this.#model.withhold(eventId);
  }

  /** Delays a withheld event: served again now, after everything sent meanwhile. */
  release(eventId: string): void {
    this.#model.release(eventId);
  }

  /**
   * An event in anyone's name, the bot's included, member of the room or not: clear
   * text, since the server holds no key.
   */
  inject(
    userId: string,
    roomId: string,
    type: string,
    content: Json,
    opts: { stateKey?: string } = {},
  ): string {
    return this.#model.append({
      room_id: roomId,
      sender: userId,
      type,
      content,
      ...(opts.stateKey === undefined ? {} : { state_key: opts.stateKey }),
    }).event_id;
  }

  #mustExist(eventId: string): MatrixEvent {
    const event = this.#model.event(eventId);
    if (event === undefined) throw new Error(`no event ${eventId}`);
    return event;
  }
}
