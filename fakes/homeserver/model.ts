/**
 * The in-memory state of the fake Matrix homeserver: rooms, one global event stream
 * (stream positions give the sync and pagination tokens), room state, redactions.
 * No HTTP here; `routes.ts` speaks the Client-Server API over it.
 */
import { randomBytes } from 'node:crypto';

export interface MatrixEvent {
  event_id: string;
  room_id: string;
  sender: string;
  type: string;
  content: Record<string, unknown>;
  origin_server_ts: number;
  state_key?: string;
  redacts?: string;
  unsigned: Record<string, unknown>;
}

export interface StoredEvent {
  /** Position in the global stream, 1-based. Token `s<pos>` means "after this event". */
  readonly pos: number;
  readonly event: MatrixEvent;
  /**
   * Not served (a lying server withholds it, lies.ts); a delayed event is served again
   * from a later position, so a client that synced past this one still receives it.
   */
  hidden: boolean;
}

export interface RoomSpec {
  id: string;
  /** Joined members; the first is the creator (power 100). */
  members: string[];
  /** Invited but not joined. */
  invited?: string[];
  joinRule?: 'invite' | 'public' | 'knock' | 'restricted';
  encrypted?: boolean;
  /** Extra power levels by user. */
  powerLevels?: Record<string, number>;
}

export class HomeserverModel {
  readonly #stream: StoredEvent[] = [];
  readonly #byId = new Map<string, StoredEvent>();
  readonly #rooms = new Map<string, StoredEvent[]>();
  readonly #listeners = new Set<() => void>();
  #counter = 0;

  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Current stream position: the token `s<head>` means "everything so far". */
  head(): number {
    return this.#stream.length;
  }

  onAppend(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  hasRoom(roomId: string): boolean {
    return this.#rooms.has(roomId);
  }

  roomIds(): string[] {
    return [...this.#rooms.keys()];
  }

  createRoom(spec: RoomSpec): string {
    if (this.#rooms.has(spec.id)) throw new Error(`room ${spec.id} exists`);
    const creator = spec.members[0];
    if (creator === undefined) throw new Error('a room needs at least one member');
    this.#rooms.set(spec.id, []);
    const state = (type: string, key: string, content: Record<string, unknown>, sender = creator) =>
      this.append({ room_id: spec.id, sender, type, state_key: key, content });
    state('m.room.create', '', { creator, room_version: '10' });
    state('m.room.member', creator, { membership: 'join', displayname: localpart(creator) });
    const users: Record<string, number> = { [creator]: 100, ...spec.powerLevels };
    state('m.room.power_levels', '', {
      users,
      users_default: 0,
      events: {},
      events_default: 0,
      state_default: 50,
      ban: 50,
      kick: 50,
      redact: 50,
      invite: 0,
    });
    state('m.room.join_rules', '', { join_rule: spec.joinRule ?? 'invite' });
    state('m.room.history_visibility', '', { history_visibility: 'shared' });
    if (spec.encrypted) state('m.room.encryption', '', { algorithm: 'm.megolm.v1.aes-sha2' });
    for (const user of [...spec.members.slice(1), ...(spec.invited ?? [])]) {
      state('m.room.member', user, { membership: 'invite' });
    }
    for (const user of spec.members.slice(1)) {
      state('m.room.member', user, { membership: 'join', displayname: localpart(user) }, user);
    }
    return spec.id;
  }

  /**
   * Appends an event to a room and the stream; returns the stored event. `hidden`: stored
   * (its id exists) but not served until `release`.
   */
  append(
    input: {
      room_id: string;
      sender: string;
      type: string;
      content: Record<string, unknown>;
      state_key?: string;
      redacts?: string;
    },
    opts: { hidden?: boolean } = {},
  ): MatrixEvent {
    const timeline = this.#rooms.get(input.room_id);
    if (!timeline) throw new Error(`unknown room ${input.room_id}`);
    this.#counter += 1;
    const event: MatrixEvent = {
      event_id: `$${this.#counter}_${randomBytes(9).toString('base64url')}`,
      room_id: input.room_id,
      sender: input.sender,
      type: input.type,
      content: structuredClone(input.content),
      origin_server_ts: this.#now(),
      unsigned: {},
      ...(input.state_key !== undefined ? { state_key: input.state_key } : {}),
      ...(input.redacts !== undefined ? { redacts: input.redacts } : {}),
    };
    const stored: StoredEvent = {
      pos: this.#stream.length + 1,
      event,
      hidden: opts.hidden === true,
    };
    this.#stream.push(stored);
    timeline.push(stored);
    this.#byId.set(event.event_id, stored);
    if (event.type === 'm.room.redaction' && event.redacts !== undefined) {
      this.#applyRedaction(event.redacts, event);
    }
    for (const listener of [...this.#listeners]) listener();
    return event;
  }

  #applyRedaction(targetId: string, redaction: MatrixEvent): void {
    const target = this.#byId.get(targetId);
    if (!target || target.event.room_id !== redaction.room_id) return;
    // Room v10 redaction algorithm, reduced to what the bot relies on: content is
    // emptied except the keys state resolution needs.
    const keep = KEPT_KEYS.get(target.event.type) ?? [];
    const content: Record<string, unknown> = {};
    for (const key of keep) {
      if (Object.hasOwn(target.event.content, key)) content[key] = target.event.content[key];
    }
    target.event.content = content;
    target.event.unsigned = {
      ...target.event.unsigned,
      redacted_because: structuredClone(redaction),
    };
  }

  event(eventId: string): MatrixEvent | undefined {
    return this.#byId.get(eventId)?.event;
  }

  /** The event as clients may see it: undefined while it is withheld. */
  servedEvent(eventId: string): MatrixEvent | undefined {
    const stored = this.#byId.get(eventId);
    return stored === undefined || stored.hidden ? undefined : stored.event;
  }

  /** Stops serving an event (it keeps its id and place). */
  withhold(eventId: string): void {
    const stored = this.#byId.get(eventId);
    if (stored === undefined) throw new Error(`no event ${eventId}`);
    stored.hidden = true;
  }

  /**
   * Serves a withheld event again, at the head of the stream: the same event (id,
   * sender, content, timestamp) arrives late, as a delayed one does.
   */
  release(eventId: string): void {
    const stored = this.#byId.get(eventId);
    if (stored === undefined) throw new Error(`no event ${eventId}`);
    if (!stored.hidden) return;
    const timeline = this.#rooms.get(stored.event.room_id);
    if (!timeline) throw new Error(`unknown room ${stored.event.room_id}`);
    const moved: StoredEvent = { pos: this.#stream.length + 1, event: stored.event, hidden: false };
    this.#stream.push(moved);
    timeline.push(moved);
    this.#byId.set(eventId, moved);
    for (const listener of [...this.#listeners]) listener();
  }

  /** Every event of a room in order, as stored (mutations by redaction included). */
  roomEvents(roomId: string): MatrixEvent[] {
    return (this.#rooms.get(roomId) ?? [])
      .filter((s) => this.#byId.get(s.event.event_id) === s)
      .map((s) => s.event);
  }

  /** Room state after every event with stream position < `beforePos` (Infinity: current). */
  stateAt(roomId: string, beforePos = Number.POSITIVE_INFINITY): Map<string, MatrixEvent> {
    const state = new Map<string, MatrixEvent>();
    for (const stored of this.#rooms.get(roomId) ?? []) {
      if (stored.pos >= beforePos) break;
      if (stored.event.state_key !== undefined) {
        state.set(stateKey(stored.event.type, stored.event.state_key), stored.event);
      }
    }
    return state;
  }

  stateEvent(roomId: string, type: string, key: string): MatrixEvent | undefined {
    return this.stateAt(roomId).get(stateKey(type, key));
  }

  membership(roomId: string, userId: string): string | undefined {
    const member = this.stateEvent(roomId, 'm.room.member', userId);
    const m = member?.content['membership'];
    return typeof m === 'string' ? m : undefined;
  }

  joinedMembers(roomId: string): string[] {
    const out: string[] = [];
    for (const ev of this.stateAt(roomId).values()) {
      if (ev.type === 'm.room.member' && ev.content['membership'] === 'join' && ev.state_key) {
        out.push(ev.state_key);
      }
    }
    return out;
  }

  /** Events of a room that are served, with their stream positions, in order. */
  roomStream(roomId: string): readonly StoredEvent[] {
    return (this.#rooms.get(roomId) ?? []).filter((s) => !s.hidden);
  }

  positionOf(eventId: string): number | undefined {
    return this.#byId.get(eventId)?.pos;
  }
}

export function stateKey(type: string, key: string): string {
  return `${type}\u0000${key}`;
}

function localpart(userId: string): string {
  return userId.replace(/^@/, '').split(':')[0] ?? userId;
}

/** Content keys a redaction keeps (room v10), for the types the fake creates. */
const KEPT_KEYS = new Map<string, string[]>([
  ['m.room.member', ['membership']],
  ['m.room.create', ['creator']],
  ['m.room.join_rules', ['join_rule']],
  ['m.room.history_visibility', ['history_visibility']],
  [
    'm.room.power_levels',
    [
      'ban',
      'events',
      'events_default',
      'kick',
      'redact',
      'state_default',
      'users',
      'users_default',
    ],
  ],
]);
