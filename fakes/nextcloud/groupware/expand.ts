/**
 * What Nextcloud's `<c:expand>` does to one stored event, for the rules the broker's
 * tests and the demo use: an event's times are converted to UTC (a `TZID` through the
 * zone database, a floating time as if it were UTC), all-day dates are kept, and a
 * `RRULE` of FREQ=DAILY or WEEKLY with INTERVAL, COUNT or UNTIL becomes one VEVENT per
 * occurrence in the window, each with a RECURRENCE-ID, the RRULE gone.
 *
 * Not modelled (the real server does them): BYDAY/BYMONTH and the other BY parts,
 * MONTHLY and YEARLY rules, EXDATE, RDATE, overridden occurrences, VTIMEZONE blocks the
 * object defines itself. A rule that repeats without end at least hourly fails every
 * query on its calendar, as Nextcloud's 3500-occurrence limit makes it do.
 */
import { IcalError, param, prop, type Comp, type Prop } from './ical.js';

const DAY = 86_400_000;
export const MAX_OCCURRENCES = 3500;

export class TooManyOccurrences extends Error {}

/** A time as stored: UTC instant, or a date (all-day). */
export type Stamp = { utc: number } | { date: number };

/** The offset (ms) of `zone` at instant `t`: local wall time minus UTC. */
function offsetAt(zone: string, t: number): number {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    }).formatToParts(new Date(t));
  } catch {
    return 0; // an unknown zone: as UTC
  }
  const n = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second')) - t;
}

/** Wall-clock ms (fields read as UTC) in `zone` → the UTC instant. */
export function fromLocal(wall: number, zone: string | undefined): number {
  if (zone === undefined) return wall;
  const first = wall - offsetAt(zone, wall);
  return wall - offsetAt(zone, first);
}

function wallOf(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/.exec(value);
  if (m === null) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0'] = m;
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
}

/** A DTSTART/DTEND/RECURRENCE-ID value; throws IcalError when it does not parse. */
export function readStamp(p: Prop): { stamp: Stamp; wall: number; zone: string | undefined } {
  const wall = wallOf(p.value);
  if (wall === undefined) throw new IcalError('bad date-time');
  if (!p.value.includes('T')) return { stamp: { date: wall }, wall, zone: undefined };
  const zone = p.value.endsWith('Z') ? undefined : param(p, 'TZID');
  return { stamp: { utc: fromLocal(wall, zone) }, wall, zone };
}

export function basic(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

function dateValue(ms: number): string {
  return basic(ms).slice(0, 8);
}

function durationMs(value: string): number {
  const m = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(value);
  if (m === null) return 0;
  const [, w, d, h, mi, s] = m.map((x) => Number(x ?? 0));
  return (((w ?? 0) * 7 + (d ?? 0)) * 86_400 + (h ?? 0) * 3600 + (mi ?? 0) * 60 + (s ?? 0)) * 1000;
}

interface Rule {
  step: number;
  count?: number;
  until?: number;
}

function ruleOf(vevent: Comp): Rule | undefined {
  const rrule = prop(vevent, 'RRULE');
  if (rrule === undefined) return undefined;
  const parts = new Map(rrule.value.split(';').map((kv) => kv.split('=', 2) as [string, string]));
  const freq = parts.get('FREQ');
  const interval = Number(parts.get('INTERVAL') ?? 1);
  const count = parts.get('COUNT');
  const until = parts.get('UNTIL');
  if (count === undefined && until === undefined && freq !== 'DAILY' && freq !== 'WEEKLY')
    throw new TooManyOccurrences();
  const step = freq === 'WEEKLY' ? 7 * DAY : freq === 'DAILY' ? DAY : undefined;
  if (step === undefined) throw new IcalError(`FREQ=${freq ?? ''} is not modelled by the fake`);
  return {
    step: step * interval,
    ...(count === undefined ? {} : { count: Number(count) }),
    ...(until === undefined ? {} : { until: wallOf(until) ?? 0 }),
  };
}

function overlaps(start: number, end: number, from: number, to: number): boolean {
  return start < to && (end > from || (end === start && start >= from));
}

/** Each occurrence of `vevent` (start wall time) overlapping [from, to), with its UTC span. */
function occurrences(
  vevent: Comp,
  from: number,
  to: number,
): { start: Stamp; end: Stamp | undefined; recurring: boolean }[] {
  const dtstart = prop(vevent, 'DTSTART');
  if (dtstart === undefined) return [];
  const start = readStamp(dtstart);
  const dtend = prop(vevent, 'DTEND');
  const end = dtend === undefined ? undefined : readStamp(dtend);
  const duration = prop(vevent, 'DURATION');
  const rule = ruleOf(vevent);
  const isDate = 'date' in start.stamp;
  const length =
    end !== undefined
      ? end.wall - start.wall
      : duration !== undefined
        ? durationMs(duration.value)
        : isDate
          ? DAY
          : 0;
  const out: { start: Stamp; end: Stamp | undefined; recurring: boolean }[] = [];
  const limit = rule === undefined ? 1 : (rule.count ?? Number.MAX_SAFE_INTEGER);
  for (let i = 0, wall = start.wall; i < limit; i++, wall += rule?.step ?? 0) {
    if (rule?.until !== undefined && wall > rule.until) break;
    if (i >= MAX_OCCURRENCES) throw new TooManyOccurrences();
    const s = isDate ? wall : fromLocal(wall, start.zone);
    const e = isDate ? wall + length : fromLocal(wall + length, end?.zone ?? start.zone);
    if (s >= to) break;
    if (!overlaps(s, e, from, to)) continue;
    out.push({
      start: isDate ? { date: s } : { utc: s },
      end: end === undefined ? undefined : isDate ? { date: e } : { utc: e },
      recurring: rule !== undefined,
    });
    if (rule === undefined) break;
  }
  return out;
}

function stampProp(name: string, stamp: Stamp): Prop {
  return 'date' in stamp
    ? { name, params: ';VALUE=DATE', value: dateValue(stamp.date) }
    : { name, params: '', value: basic(stamp.utc) };
}

/** Whether any occurrence of the event overlaps the window (the time-range filter). */
export function inRange(vevent: Comp, from: number, to: number): boolean {
  return occurrences(vevent, from, to).length > 0;
}

/** The expanded VEVENTs of one stored VEVENT in the window. */
export function expand(vevent: Comp, from: number, to: number): Comp[] {
  const dropped = new Set(['DTSTART', 'DTEND', 'RRULE', 'EXDATE', 'RDATE', 'RECURRENCE-ID']);
  return occurrences(vevent, from, to).map((o) => {
    const props = [
      ...vevent.props.filter((p) => !dropped.has(p.name)),
      stampProp('DTSTART', o.start),
      ...(o.end === undefined ? [] : [stampProp('DTEND', o.end)]),
    ];
    if (o.recurring) props.push(stampProp('RECURRENCE-ID', o.start));
    return { name: 'VEVENT', props, comps: [] };
  });
}
