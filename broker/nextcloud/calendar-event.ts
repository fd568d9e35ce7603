/**
 * One event as the broker reports it, read from a `VEVENT` (an expanded occurrence, or
 * the stored object read back after a create).
 *
 * Security: descriptions are third-party text (anyone can send an invitation): they are
 * read only when the caller asks (`includeText`), and the surface caps and labels them.
 */
import { all, first, unescapeText, type Component } from './content-lines.js';
import { readDuration, readTime, showTime, type EventTime } from './calendar-time.js';

export interface CalendarEvent {
  uid: string | null;
  title: string | null;
  /** ISO 8601 UTC (`2026-12-14T08:00:00Z`), a date for all-day events (`2026-12-24`). */
  start: string | null;
  /** As `start`; from DURATION when there is no DTEND; null when neither is given. */
  end: string | null;
  all_day: boolean;
  /** Set on a local (not UTC) time: the zone id, or `floating`. */
  zone?: string;
  location: string | null;
  /** Set on an occurrence of a recurring event: which one (as `start`). */
  recurrence_id?: string;
  status?: string;
  /** Only with `includeText`. */
  description?: string | null;
}

function textOf(component: Component, name: string): string | null {
  const line = first(component, name);
  return line === undefined ? null : unescapeText(line.value);
}

function timeOf(component: Component, name: string): EventTime | undefined {
  const line = first(component, name);
  return line === undefined ? undefined : readTime(line);
}

function endOf(component: Component, start: EventTime | undefined): EventTime | undefined {
  const end = timeOf(component, 'DTEND');
  if (end !== undefined) return end;
  const duration = first(component, 'DURATION');
  const ms = duration === undefined ? undefined : readDuration(duration.value);
  if (ms === undefined || start?.kind !== 'utc') return undefined;
  return { kind: 'utc', ms: start.ms + ms };
}

export function toEvent(component: Component, includeText: boolean): CalendarEvent {
  const start = timeOf(component, 'DTSTART');
  const end = endOf(component, start);
  const recurrence = timeOf(component, 'RECURRENCE-ID');
  const status = textOf(component, 'STATUS');
  const zone = start?.kind === 'local' ? (start.zone ?? 'floating') : undefined;
  return {
    uid: textOf(component, 'UID'),
    title: textOf(component, 'SUMMARY'),
    start: start === undefined ? null : showTime(start),
    end: end === undefined ? null : showTime(end),
    all_day: start?.kind === 'date',
    ...(zone === undefined ? {} : { zone }),
    location: textOf(component, 'LOCATION'),
    ...(recurrence === undefined ? {} : { recurrence_id: showTime(recurrence) }),
    ...(status === null ? {} : { status }),
    ...(includeText
      ? {
          description:
            all(component, 'DESCRIPTION')
              .map((l) => unescapeText(l.value))
              .join('\n') || null,
        }
      : {}),
  };
}

/** The `VEVENT`s of a document's `VCALENDAR`s. */
export function veventsOf(calendars: readonly Component[]): Component[] {
  return calendars
    .filter((c) => c.name === 'VCALENDAR')
    .flatMap((c) => c.children.filter((e) => e.name === 'VEVENT'));
}

/** Order: by start (all-day dates sort as their midnight UTC), then uid, then occurrence. */
export function compareEvents(a: CalendarEvent, b: CalendarEvent): number {
  const key = (e: CalendarEvent): string =>
    `${(e.start ?? '').padEnd(20, ' ')}\u0000${e.uid ?? ''}\u0000${e.recurrence_id ?? ''}`;
  const x = key(a);
  const y = key(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
