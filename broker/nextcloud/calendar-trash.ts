/**
 * The calendar trash bin, as undo uses it (docs/nextcloud-behaviour.md "The calendar
 * trash bin"): a `DELETE` of an event moves it to `calendars/<user>/trashbin/objects/
 * <n>.ics`; the items are listed only by a `calendar-query` REPORT (a PROPFIND is
 * 501); a `MOVE` of an item to `trashbin/restore/<n>.ics` puts it back under its own
 * name, or answers 403 when that name is taken.
 */
import { parseComponents, first, ContentLineError } from './content-lines.js';
import { veventsOf } from './calendar-event.js';
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { NextcloudError } from './errors.js';
import { collectionError } from './groupware-errors.js';
import { groupwareUrl } from './groupware-url.js';
import { calendarRestoreUrl, calendarTrashUrl } from './history-url.js';
import { discard } from './http.js';
import { parseMultistatus, textProp } from './multistatus.js';
import { restoreMove } from './restore-move.js';
import type { Session } from './session.js';
import { strictDecodeSegment } from './url.js';

export interface TrashedEvent {
  /** The item's name in the calendar trash bin (`<n>.ics`): what a restore names. */
  readonly item: string;
  /** The calendar it came from (its name, as `collections` lists it). */
  readonly calendar: string;
  /** When it was deleted, in ms. */
  readonly deletedAt: number;
  readonly etag: string | null;
  /** The UIDs of its events (one, for an event the broker made). */
  readonly uids: readonly string[];
}

/** The REPORT the items are listed with: every object, its calendar and deletion time. */
export const CALENDAR_TRASH_QUERY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:x="http://nextcloud.com/ns">' +
  '<d:prop><d:getetag/><x:calendar-uri/><x:deleted-at/><c:calendar-data/></d:prop>' +
  '<c:filter><c:comp-filter name="VCALENDAR"/></c:filter>' +
  '</c:calendar-query>';

function bad(instance: string): NextcloudError {
  return new NextcloudError(
    'bad_response',
    `Nextcloud sent a calendar trash bin listing the broker cannot read on instance '${instance}': report this to the owner`,
  );
}

function uidsOf(data: string | null): string[] {
  if (data === null) return [];
  try {
    return veventsOf(parseComponents(data)).flatMap((e) => first(e, 'UID')?.value ?? []);
  } catch (error) {
    if (error instanceof ContentLineError) return [];
    throw error;
  }
}

/** Every event in the calendar trash bin, the newest first. */
export async function listCalendarTrash(
  { conn }: Pick<Session, 'conn'>,
  signal?: AbortSignal,
): Promise<TrashedEvent[]> {
  const url = calendarTrashUrl(conn.instance.url, conn.instance.username);
  const { text } = await conn.exchange(
    {
      method: 'REPORT',
      url,
      headers: { 'content-type': 'application/xml; charset=utf-8', depth: '1' },
      body: CALENDAR_TRASH_QUERY,
    },
    { idempotent: true, ok: [207], ctx: { verb: 'REPORT', instance: conn.name, path: '' }, signal },
    MAX_SMALL_REPLY_BYTES * 8,
  );
  const out: TrashedEvent[] = [];
  for (const { href, props } of parseMultistatus(text, { groupware: true })) {
    const item = strictDecodeSegment(href.replace(/\/+$/, '').split('/').pop() ?? '');
    const calendar = textProp(props, 'calendar-uri');
    const deletedAt = Date.parse(textProp(props, 'deleted-at') ?? '');
    if (item === undefined || item === '' || calendar === null || !Number.isFinite(deletedAt))
      throw bad(conn.name);
    out.push({
      item,
      calendar,
      deletedAt,
      etag: textProp(props, 'getetag'),
      uids: uidsOf(textProp(props, 'calendar-data')),
    });
  }
  return out.sort((a, b) => b.deletedAt - a.deletedAt);
}

/**
 * Puts calendar trash bin `item` back in its calendar under its own name.
 * `destination_exists` when an object of that name is there now: nothing moves.
 * Sent once, never retried.
 */
export async function restoreCalendarEvent(
  { conn }: Pick<Session, 'conn'>,
  item: string,
  signal?: AbortSignal,
): Promise<void> {
  const { url: base, username } = conn.instance;
  const status = await restoreMove(
    conn,
    calendarTrashUrl(base, username, item),
    calendarRestoreUrl(base, username, item),
    [403, 404],
    '',
    signal,
  );
  if (status === 403)
    throw new NextcloudError(
      'destination_exists',
      `calendar trash bin item '${item}' was not restored on instance '${conn.name}': an event of its name is in its calendar now; it stays in the trash bin`,
      { status: 403 },
    );
  if (status === 404)
    throw new NextcloudError(
      'not_found',
      `calendar trash bin item '${item}' is gone on instance '${conn.name}' (restored, or emptied)`,
      { status: 404 },
    );
}

/**
 * Moves event `object` of `calendar` into the calendar trash bin (a DELETE; Nextcloud
 * keeps it there, restorable). `exists` when an event of that name is already in the
 * trash bin: Nextcloud then deletes nothing. Sent once, never retried.
 */
export async function trashEvent(
  { conn }: Pick<Session, 'conn'>,
  calendar: string,
  object: string,
  signal?: AbortSignal,
): Promise<void> {
  const url = groupwareUrl(conn.instance.url, conn.instance.username, 'calendar', [
    calendar,
    object,
  ]);
  let status: number;
  try {
    const res = await conn.call(
      { method: 'DELETE', url, headers: {} },
      {
        idempotent: false,
        ok: [204, 403],
        ctx: { verb: 'DELETE', instance: conn.name, path: calendar },
        deadline: true,
        signal,
      },
    );
    discard(res);
    status = res.status;
  } catch (error) {
    throw collectionError(error, 'calendar', calendar, conn.name);
  }
  if (status === 403)
    throw new NextcloudError(
      'exists',
      `event '${object}' of calendar '${calendar}' was not deleted on instance '${conn.name}': one of its name is already in the calendar trash bin, or the calendar is read-only`,
      { status: 403 },
    );
}

/**
 * The ETag of event `object` of `calendar` now (a GET; Nextcloud's calendar ETag is a
 * hash of the object's data, so an edit changes it), or null when no such event is
 * there (deleted, moved to the calendar trash bin, or the calendar is gone).
 */
export async function eventEtag(
  { conn }: Pick<Session, 'conn'>,
  calendar: string,
  object: string,
  signal?: AbortSignal,
): Promise<string | null> {
  const url = groupwareUrl(conn.instance.url, conn.instance.username, 'calendar', [
    calendar,
    object,
  ]);
  let res;
  try {
    res = await conn.call(
      { method: 'GET', url, headers: {} },
      {
        idempotent: true,
        ok: [200, 404],
        ctx: { verb: 'GET', instance: conn.name, path: calendar },
        deadline: true,
        signal,
      },
    );
  } catch (error) {
    throw collectionError(error, 'calendar', calendar, conn.name);
  }
  discard(res);
  if (res.status === 404) return null;
  const etag = res.headers['etag'];
  if (typeof etag !== 'string')
    throw new NextcloudError(
      'bad_response',
      `Nextcloud answered event '${object}' of calendar '${calendar}' on instance '${conn.name}' without an ETag: report this to the owner`,
    );
  return etag;
}
