/**
 * Times in CalDAV: the basic UTC form a time-range must use (`20261214T000000Z`; the
 * extended form, an offset or a date alone make Nextcloud answer 500), and the values
 * of DTSTART/DTEND/DURATION as the broker reports them.
 */
import type { ContentLine } from './content-lines.js';

/** ms since the epoch → `YYYYMMDDTHHMMSSZ` (whole seconds, UTC). */
export function basicUtc(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

/** ms since the epoch → `2026-12-14T08:00:00Z`. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A time as an event carries it. */
export type EventTime =
  | { kind: 'utc'; ms: number }
  | { kind: 'date'; date: string }
  /** A local time with a zone id, or floating (no zone): not converted. */
  | { kind: 'local'; local: string; zone: string | null };

const DATE_TIME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/;
const DATE = /^(\d{4})(\d{2})(\d{2})$/;

/** A DATE or DATE-TIME property, or undefined when it does not parse. */
export function readTime(line: ContentLine): EventTime | undefined {
  const value = line.value.trim();
  const date = DATE.exec(value);
  if (date !== null && (line.params.get('VALUE') ?? 'DATE').toUpperCase() === 'DATE')
    return { kind: 'date', date: `${date[1]}-${date[2]}-${date[3]}` };
  const m = DATE_TIME.exec(value);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, z] = m;
  const local = `${y}-${mo}-${d}T${h}:${mi}:${s}`;
  if (z === 'Z') {
    const ms = Date.parse(`${local}Z`);
    return Number.isFinite(ms) ? { kind: 'utc', ms } : undefined;
  }
  return { kind: 'local', local, zone: line.params.get('TZID') ?? null };
}

const DURATION = /^([+-])?P(?:(\d+)W|(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?)$/;

/** An iCalendar DURATION in ms, or undefined. */
export function readDuration(value: string): number | undefined {
  const m = DURATION.exec(value.trim());
  if (m === null || value.trim() === 'P' || value.trim().endsWith('T')) return undefined;
  const [, sign, w, d, h, mi, s] = m;
  const n = (x: string | undefined): number => (x === undefined ? 0 : Number(x));
  const ms = ((n(w) * 7 + n(d)) * 86_400 + n(h) * 3600 + n(mi) * 60 + n(s)) * 1000;
  return sign === '-' ? -ms : ms;
}

/** How an event time is written in an answer: ISO UTC, a date, or a local time. */
export function showTime(t: EventTime): string {
  if (t.kind === 'utc') return isoSeconds(t.ms);
  if (t.kind === 'date') return t.date;
  return t.local;
}
