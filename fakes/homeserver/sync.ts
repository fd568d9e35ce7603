/**
 * `/sync` for the fake homeserver: initial sync (last `timeline.limit` events plus the
 * state *before* them, as matrix-js-sdk expects) and incremental long-poll sync.
 */
import type { E2eeState } from './e2ee-state.js';
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

/** Parses a stream token `s<n>` (or a sync token `s<n>_<m>`): the room stream position. */
export function parseToken(token: string): number | undefined {
  return parseSyncToken(token)?.room;
}

/** A sync token `s<room>_<e2ee>`: positions in the room stream and the E2EE stream. */
export interface SyncPosition {
  room: number;
  e2ee: number;
}

export function parseSyncToken(token: string): SyncPosition | undefined {
  const m = /^s(\d{1,12})(?:_(\d{1,12}))?$/.exec(token);
  return m ? { room: Number(m[1]), e2ee: Number(m[2] ?? '0') } : undefined;
}

/** Serves one event (serve.ts): inside /sync without room_id, bundling when told. */
export type Serve = (event: MatrixEvent, opts: { withRoomId: boolean; bundle: boolean }) => object;

interface JoinedRoomSync {
  timeline: { events: object[]; limited: boolean; prev_batch: string };
  state: { events: object[] };
  ephemeral: { events: [] };
  account_data: { events: [] };
  unread_notifications: { highlight_count: number; notification_count: number };
}

/** True when `since` has something new for this session. */
export function hasNews(
  model: HomeserverModel,
  e2ee: E2eeState,
  who: { userId: string; deviceId: string },
  since: SyncPosition,
): boolean {
  if (buildJoined(model, who.userId, since.room, 1, () => ({})) !== undefined) return true;
  if (e2ee.toDeviceFor(who.userId, who.deviceId, since.e2ee).length > 0) return true;
  return deviceListChanges(model, e2ee, who.userId, since.e2ee).length > 0;
}

/** Users sharing a room with `userId` (or `userId` itself) whose keys changed after `since`. */
function deviceListChanges(
  model: HomeserverModel,
  e2ee: E2eeState,
  userId: string,
  since: number,
): string[] {
  const changed = e2ee.changedSince(since);
  if (changed.size === 0) return [];
  const shared = new Set([userId]);
  for (const roomId of model.roomIds()) {
    if (model.membership(roomId, userId) !== 'join') continue;
    for (const member of model.joinedMembers(roomId)) shared.add(member);
  }
  return [...changed].filter((u) => shared.has(u));
}

function buildJoined(
  model: HomeserverModel,
  userId: string,
  since: number | undefined,
  limit: number,
  serve: Serve,
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
    // As Synapse: a room joined since `since` is limited whatever its length, and only a
    // limited timeline gets bundled aggregations (the client may lack what came before).
    const newlyJoined = since !== undefined && fresh;
    const bundle = limited || newlyJoined;
    join[roomId] = {
      timeline: {
        events: timeline.map((s) => serve(s.event, { withRoomId: false, bundle })),
        limited: limited || newlyJoined,
        prev_batch: `s${first.pos - 1}`,
      },
      state: { events: stateEvents.map((e) => serve(e, { withRoomId: false, bundle: false })) },
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
  e2ee: E2eeState,
  who: { userId: string; deviceId: string },
  since: SyncPosition | undefined,
  limit: number,
  serve: Serve,
  keyCounts: Record<string, unknown>,
): object {
  const join = buildJoined(model, who.userId, since?.room, limit, serve) ?? {};
  const toDevice = e2ee.toDeviceFor(who.userId, who.deviceId, since?.e2ee ?? 0);
  // An initial sync reports no changes: the client queries every key it needs.
  const changed = since === undefined ? [] : deviceListChanges(model, e2ee, who.userId, since.e2ee);
  return {
    next_batch: `s${model.head()}_${e2ee.head()}`,
    rooms: { join, invite: {}, leave: {}, knock: {} },
    account_data: { events: [] },
    presence: { events: [] },
    to_device: { events: toDevice.map((m) => m.event) },
    device_lists: { changed, left: [] },
    device_one_time_keys_count: {},
    ...keyCounts,
  };
}
