/**
 * `/sync` for the fake homeserver: initial sync (last `timeline.limit` events plus the
 * state *before* them, as matrix-js-sdk expects) and incremental long-poll sync.
 */
import type { HomeserverModel, MatrixEvent } from './model.js';

/** Synapse's default when a filter names no timeline limit. */
const DEFAULT_TIMELINE_LIMIT = 10;

export interface SyncFilter {
  room?: { timeline?: { limit?: number } };
}

export function timelineLimit(filter: SyncFilter | undefined): number {
  const limit = filter?.room?.timeline?.limit;
  return typeof limit === 'number' && Number.isInteger(limit) && limit > 0
    ? limit
    : DEFAULT_TIMELINE_LIMIT;
}

/** Parses a stream token `s<n>`; undefined when malformed. */
export function parseToken(token: string): number | undefined {
  const m = /^s(\d{1,12})$/.exec(token);
  return m ? Number(m[1]) : undefined;
}

/** An event as a client sees it: `unsigned.age` computed now; room_id dropped in /sync. */
export function clientEvent(event: MatrixEvent, now: number, withRoomId: boolean): object {
  const copy: Record<string, unknown> = { ...structuredClone(event) };
  if (!withRoomId) delete copy['room_id'];
  copy['unsigned'] = { ...event.unsigned, age: Math.max(0, now - event.origin_server_ts) };
  return copy;
}

interface JoinedRoomSync {
  timeline: { events: object[]; limited: boolean; prev_batch: string };
  state: { events: object[] };
  ephemeral: { events: [] };
  account_data: { events: [] };
  unread_notifications: { highlight_count: number; notification_count: number };
}

/** True when `since` has something new for `userId`. */
export function hasNews(model: HomeserverModel, userId: string, since: number): boolean {
  return buildJoined(model, userId, since, 1, 0) !== undefined;
}

function buildJoined(
  model: HomeserverModel,
  userId: string,
  since: number | undefined,
  limit: number,
  now: number,
): Record<string, JoinedRoomSync> | undefined {
  const join: Record<string, JoinedRoomSync> = {};
  let any = false;
  for (const roomId of model.roomIds()) {
    if (model.membership(roomId, userId) !== 'join') continue;
    const all = model.roomStream(roomId);
    const joinPos = model.positionOf(
      model.stateEvent(roomId, 'm.room.member', userId)?.event_id ?? '',
    );
    // A room joined after `since` is sent as if this were the initial sync.
    const fresh = since === undefined || (joinPos !== undefined && joinPos > since);
    const candidates = fresh ? all : all.filter((s) => s.pos > since);
    if (candidates.length === 0) continue;
    const timeline = candidates.slice(-limit);
    const first = timeline[0];
    if (!first) continue;
    const limited = candidates.length > timeline.length || (fresh && all.length > timeline.length);
    // matrix-js-sdk builds room state from `state` (the
    // state before the timeline) plus the timeline's own state events.
    const stateEvents =
      fresh || limited ? [...model.stateAt(roomId, first.pos).values()] : ([] as MatrixEvent[]);
    join[roomId] = {
      timeline: {
        events: timeline.map((s) => clientEvent(s.event, now, false)),
        limited,
        prev_batch: `s${first.pos - 1}`,
      },
      state: { events: stateEvents.map((e) => clientEvent(e, now, false)) },
      ephemeral: { events: [] },
      account_data: { events: [] },
      unread_notifications: { highlight_count: 0, notification_count: 0 },
    };
    any = true;
  }
  return any ? join : undefined;
}

export function buildSync(
  model: HomeserverModel,
  userId: string,
  since: number | undefined,
  limit: number,
  now: number,
): object {
  const join = buildJoined(model, userId, since, limit, now) ?? {};
  return {
    next_batch: `s${model.head()}`,
    rooms: { join, invite: {}, leave: {}, knock: {} },
    account_data: { events: [] },
    presence: { events: [] },
    to_device: { events: [] },
    device_lists: { changed: [], left: [] },
    device_one_time_keys_count: {},
  };
}
