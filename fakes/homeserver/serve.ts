/**
 * How the fake serves a stored event to a client. As the Client-Server API says: the
 * event with `unsigned.age` computed now (`room_id` dropped inside /sync). And as Synapse
 * does (spec "Server-side aggregation of m.replace relationships", MSC3925): where the
 * client may lack what came before (a /sync timeline that is limited or a room's first,
 * /messages, /event), the latest applicable edit is bundled whole into
 * `unsigned["m.relations"]["m.replace"]`. An applicable edit relates by `m.replace` to
 * the event, has its type and sender, and is not redacted; state events, edits and
 * reactions get none. A lie (lies.ts) may bundle any other instead.
 */
import type { Lies } from './lies.js';
import type { HomeserverModel, MatrixEvent } from './model.js';

export interface ServeOptions {
  /** Events inside /sync carry no room_id. */
  readonly withRoomId: boolean;
  /** Bundle the applicable edit (see above). */
  readonly bundle: boolean;
}

function relation(event: MatrixEvent): Record<string, unknown> | undefined {
  const rel = event.content['m.relates_to'];
  return typeof rel === 'object' && rel !== null ? (rel as Record<string, unknown>) : undefined;
}

const redacted = (event: MatrixEvent): boolean => event.unsigned['redacted_because'] !== undefined;

/** The edit Synapse bundles with `original`: the latest applicable one, if any. */
export function applicableEdit(
  model: HomeserverModel,
  original: MatrixEvent,
): MatrixEvent | undefined {
  if (original.state_key !== undefined || redacted(original)) return undefined;
  const own = relation(original)?.['rel_type'];
  if (own === 'm.replace' || own === 'm.annotation') return undefined;
  let latest: MatrixEvent | undefined;
  for (const { event } of model.roomStream(original.room_id)) {
    const rel = relation(event);
    if (rel?.['rel_type'] !== 'm.replace' || rel['event_id'] !== original.event_id) continue;
    if (event.type !== original.type || event.sender !== original.sender || redacted(event)) {
      continue;
    }
    const later =
      latest === undefined ||
      event.origin_server_ts > latest.origin_server_ts ||
      (event.origin_server_ts === latest.origin_server_ts && event.event_id > latest.event_id);
    if (later) latest = event;
  }
  return latest;
}

function plain(event: MatrixEvent, now: number, withRoomId: boolean): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...structuredClone(event) };
  if (!withRoomId) delete copy['room_id'];
  copy['unsigned'] = { ...event.unsigned, age: Math.max(0, now - event.origin_server_ts) };
  return copy;
}

export function serveEvent(
  model: HomeserverModel,
  lies: Lies,
  event: MatrixEvent,
  now: number,
  opts: ServeOptions,
): object {
  const served = plain(event, now, opts.withRoomId);
  const edit =
    lies.bundledEdit(event.event_id) ?? (opts.bundle ? applicableEdit(model, event) : undefined);
  if (edit !== undefined) {
    const unsigned = served['unsigned'] as Record<string, unknown>;
    const relations = (unsigned['m.relations'] ?? {}) as Record<string, unknown>;
    unsigned['m.relations'] = { ...relations, 'm.replace': plain(edit, now, opts.withRoomId) };
  }
  return served;
}
