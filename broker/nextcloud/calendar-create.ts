/**
 * Creating one event: a `PUT` of a new `.ics` with `If-None-Match: *`, then a `GET` of
 * what Nextcloud stored (it may add or change properties, and answers without an ETag
 * when it does), read into the event the answer reports.
 *
 * Security: create only — the object name and UID are new, and `If-None-Match: *` makes
 * the server refuse (412) rather than replace anything. The event has no ORGANIZER and
 * no ATTENDEE, so creating it sends no invitation. Every text value is escaped
 * (content-lines.ts), so no value becomes a property of its own. Not retried: a repeat
 * after a lost answer could create the event twice.
 */
import { randomUUID } from 'node:crypto';
import {
  contentLine,
  ContentLineError,
  parseComponents,
  textValue,
  type Component,
} from './content-lines.js';
import { basicUtc, isoSeconds } from './calendar-time.js';
import { toEvent, veventsOf, type CalendarEvent } from './calendar-event.js';
import { resolveCollection } from './collections.js';
import { NextcloudError } from './errors.js';
import { collectionError } from './groupware-errors.js';
import { groupwareUrl } from './groupware-url.js';
import { checkWindow } from './calendar-events.js';
import type { Session } from './session.js';

export interface NewEvent {
  /**
   * The event's object name and UID stem (a random UUID): chosen by the caller so that it
   * can record the UID before the PUT is sent (`eventUid`); default a new one.
   */
  uuid?: string;
  title: string;
  /** ms since the epoch (whole seconds are kept). */
  start: number;
  end: number;
  location?: string | undefined;
  description?: string | undefined;
}

export const PRODID = '-//Nextcloud Access Broker//EN';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The UID of the event the broker creates from `uuid` (its object is `<uuid>.ics`). */
export function eventUid(uuid: string): string {
  return `${uuid}@nextcloud-access-broker`;
}

/** The iCalendar document of a new event (CRLF line ends, folded, every text escaped). */
export function eventDocument(event: NewEvent, uid: string, now: number): string {
  const lines = [
    contentLine('BEGIN', 'VCALENDAR'),
    contentLine('VERSION', '2.0'),
    contentLine('PRODID', PRODID),
    contentLine('BEGIN', 'VEVENT'),
    contentLine('UID', uid),
    contentLine('DTSTAMP', basicUtc(now)),
    contentLine('SUMMARY', textValue(event.title)),
    contentLine('DTSTART', basicUtc(event.start)),
    contentLine('DTEND', basicUtc(event.end)),
    ...(event.location === undefined ? [] : [contentLine('LOCATION', textValue(event.location))]),
    ...(event.description === undefined
      ? []
      : [contentLine('DESCRIPTION', textValue(event.description))]),
    contentLine('END', 'VEVENT'),
    contentLine('END', 'VCALENDAR'),
  ];
  return lines.join('');
}

/** The stored event as read back, and what Nextcloud changed on the way. */
export interface CreatedEvent {
  event: CalendarEvent;
  /** The object's name in the calendar (`<uuid>.ics`). */
  object: string;
  etag: string | null;
  /** Fields whose stored value differs from what was sent. */
  changed: string[];
}

function readBack(text: string, uid: string): CalendarEvent {
  let events: Component[];
  try {
    events = veventsOf(parseComponents(text));
  } catch (err) {
    if (!(err instanceof ContentLineError)) throw err;
    events = [];
  }
  const mine = events.filter((e) => e.lines.some((l) => l.name === 'UID' && l.value === uid));
  const only = mine[0];
  if (only === undefined || mine.length !== 1 || events.length !== 1)
    throw new NextcloudError(
      'bad_response',
      'Nextcloud stored the event but it does not read back as the one event sent: look at the calendar before trying again; report this to the owner',
    );
  return toEvent(only, true);
}

export async function createEvent(
  { conn }: Pick<Session, 'conn'>,
  calendar: string,
  event: NewEvent,
  signal?: AbortSignal,
): Promise<CreatedEvent> {
  checkWindow(event);
  const uuid = event.uuid ?? randomUUID();
  if (!UUID.test(uuid))
    throw new NextcloudError('invalid_argument', 'invalid event id: nothing was sent');
  const uid = eventUid(uuid);
  const object = `${uuid}.ics`;
  const url = groupwareUrl(conn.instance.url, conn.instance.username, 'calendar', [
    calendar,
    object,
  ]);
  await resolveCollection(conn, 'calendar', calendar, signal);
  const ctx = { instance: conn.name, path: calendar } as const;
  try {
    await conn.exchange(
      {
        method: 'PUT',
        url,
        headers: {
          'content-type': 'text/calendar; charset=utf-8',
          // Security: create only; see the module comment.
          'if-none-match': '*',
        },
        body: eventDocument(event, uid, conn.now()),
      },
      { idempotent: false, ok: [201], ctx: { ...ctx, verb: 'PUT', write: 'create' }, signal },
    );
  } catch (err) {
    throw collectionError(err, 'calendar', calendar, conn.name);
  }
  // The PUT is done: the read-back is not cut by the signal (the event exists either way).
  const { res, text } = await conn.exchange(
    { method: 'GET', url, headers: { accept: 'text/calendar' } },
    { idempotent: true, ok: [200], ctx: { ...ctx, verb: 'GET' } },
  );
  const stored = readBack(text, uid);
  const sent = {
    title: event.title,
    start: isoSeconds(event.start),
    end: isoSeconds(event.end),
    location: event.location ?? null,
    description: event.description ?? null,
  };
  const changed = (['title', 'start', 'end', 'location', 'description'] as const).filter(
    (k) => stored[k] !== sent[k],
  );
  const etag = res.headers['etag'];
  return { event: stored, object, etag: typeof etag === 'string' ? etag : null, changed };
}
