/**
 * The events of one calendar in a window: a CalDAV `calendar-query` REPORT with a
 * time-range filter and `<c:expand>`, so that Nextcloud itself expands recurrences
 * (exceptions, excluded dates, overridden occurrences) and converts times to UTC.
 *
 * The window is at most 366 days (the server sets no limit and would compute every
 * occurrence). Results are sorted and paged by the broker; the cursor is signed and
 * bound to this calendar and window. A calendar holding an event that repeats too often
 * makes Nextcloud fail every query on it (500 "Recurring events are only allowed to
 * generate 3500"): reported as `calendar_unreadable`, not retried.
 */
import { basicUtc } from './calendar-time.js';
import { compareEvents, toEvent, veventsOf, type CalendarEvent } from './calendar-event.js';
import { resolveCollection } from './collections.js';
import { NextcloudError } from './errors.js';
import { TOO_MANY_OCCURRENCES } from './groupware-errors.js';
import { documentsOf, report } from './groupware-reply.js';
import { groupwareUrl } from './groupware-url.js';
import { decodeHref } from './multistatus.js';
import type { Session } from './session.js';

export const MAX_WINDOW_MS = 366 * 86_400_000;
const MAX_PAGE_SIZE = 500;
const MAX_REPORT_BYTES = 16 * 1024 * 1024;
/** More occurrences than this in one window: refused (narrow the window). */
const MAX_EVENTS = 5000;

export interface EventWindow {
  /** ms since the epoch, inclusive. */
  start: number;
  /** ms since the epoch, exclusive; after `start`, at most 366 days later. */
  end: number;
}

export function checkWindow(window: EventWindow): void {
  const { start, end } = window;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || !(end > start))
    throw new NextcloudError('invalid_argument', 'the window must end after it starts');
  if (end - start > MAX_WINDOW_MS)
    throw new NextcloudError(
      'invalid_argument',
      'the window is longer than 366 days: ask for a shorter one',
    );
}

/** The calendar-query REPORT body (exported for the differential tests). */
export function reportBody(window: EventWindow): string {
  const range = `start="${basicUtc(window.start)}" end="${basicUtc(window.end)}"`;
  return (
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">' +
    `<d:prop><d:getetag/><c:calendar-data><c:expand ${range}/></c:calendar-data></d:prop>` +
    '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">' +
    `<c:time-range ${range}/>` +
    '</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>'
  );
}

/** The cursor's key: this calendar and this window only. */
function cursorKey(calendar: string, window: EventWindow): string {
  // A leading `/`: never a canonical file path, so no listing cursor is one of these.
  return `/calendar/${calendar}/${basicUtc(window.start)}/${basicUtc(window.end)}`;
}

/** Every event object of a calendar-query reply, expanded, as events. */
export function eventsOfReport(
  xml: string,
  collection: readonly string[],
  origin: string,
  includeText: boolean,
): CalendarEvent[] {
  return documentsOf(xml, 'calendar', collection, origin, 'calendar-data')
    .flatMap((calendars) => veventsOf(calendars).map((e) => toEvent(e, includeText)))
    .sort(compareEvents);
}

/**
 * The events of a calendar in `window` (at most 366 days), recurrences expanded by
 * Nextcloud, times in UTC, sorted; `next` is a signed cursor for this calendar and
 * window only. `pageSize` 1-500 (default 100).
 */
export async function calendarEvents(
  { conn, cursors }: Pick<Session, 'conn' | 'cursors'>,
  calendar: string,
  window: EventWindow,
  opts: { cursor?: string | undefined; pageSize?: number; includeText?: boolean } = {},
  signal?: AbortSignal,
): Promise<{ events: CalendarEvent[]; next?: string }> {
  const pageSize = opts.pageSize ?? 100;
  const includeText = opts.includeText === true;
  checkWindow(window);
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)
    throw new NextcloudError(
      'invalid_argument',
      `the page size must be an integer from 1 to ${MAX_PAGE_SIZE}`,
    );
  const key = cursorKey(calendar, window);
  const offset = opts.cursor === undefined ? 0 : cursors.decode(opts.cursor, key);
  // The name is checked (and the URL built) before anything is sent.
  const url = groupwareUrl(conn.instance.url, conn.instance.username, 'calendar', [calendar]);
  await resolveCollection(conn, 'calendar', calendar, signal);
  const xml = await report(conn, 'calendar', calendar, url, reportBody(window), MAX_REPORT_BYTES, {
    signal,
    permanentServerError: TOO_MANY_OCCURRENCES,
  });
  const all = eventsOfReport(xml, decodeHref(url.pathname, conn.origin), conn.origin, includeText);
  if (all.length > MAX_EVENTS)
    throw new NextcloudError(
      'invalid_argument',
      `the window holds more than ${MAX_EVENTS} events: ask for a shorter window`,
    );
  const events = all.slice(offset, offset + pageSize);
  const end = offset + events.length;
  return end < all.length ? { events, next: cursors.encode(key, end) } : { events };
}
