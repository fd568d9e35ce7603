/**
 * Calendar objects as Nextcloud 29 answers for them: `PUT` of an `.ics` (create-only with
 * `If-None-Match: *`, its checks in the server's order, DTSTAMP/PRODID added — and then
 * no ETag), `GET`, and the `calendar-query` REPORT with a time-range filter and an
 * optional `<c:expand>` (see ../groupware/expand.ts for what the expansion models).
 */
import type { SeriesTraits } from '../series.js';
import { randomUUID } from 'node:crypto';
import { newEtag, type FakeCollection } from '../groupware/collections.js';
import { basic, expand, inRange, TooManyOccurrences } from '../groupware/expand.js';
import { IcalError, parseIcal, prop, writeIcal, type Comp } from '../groupware/ical.js';
import { EX, type Reply } from '../reply.js';
import { escapeXml, parseXml, XmlParseError, type XmlElement } from '../xml.js';
import { CAL, MULTISTATUS_OPEN } from './groupware-props.js';

const SABRE_PRODID = '-//Sabre//Sabre VObject 4.5.4//EN';

export function calendarNotFound(reply: Reply, uri: string): void {
  reply.sabre(404, EX.notFound, `Node with name '${uri}' could not be found`);
}

/** Body bytes as Sabre writes them in XML: CR as `&#13;`. */
export function dataXml(text: string): string {
  return escapeXml(text).replace(/\r/g, '&#13;');
}

export function putEvent(
  reply: Reply,
  calendar: FakeCollection,
  name: string,
  body: string,
  ifNoneMatch: string | undefined,
  now: number,
): void {
  if (calendar.readOnly) {
    // Observed: a read-only share hides itself from writes; the birthday calendar refuses.
    if (calendar.owner !== undefined && calendar.uri.includes('_shared_by_'))
      reply.sabre(404, EX.notFound, `Calendar with name '${calendar.uri}' could not be found`);
    else reply.sabre(403, EX.forbidden, 'Permission denied to create this calendar object');
    return;
  }
  if (existsForCreate(reply, calendar.objects, name, ifNoneMatch)) return;
  let vcal: Comp | undefined;
  try {
    vcal = parseIcal(body).find((c) => c.name === 'VCALENDAR');
  } catch (e) {
    if (!(e instanceof IcalError)) throw e;
  }
  const events = vcal?.comps.filter((c) => c.name !== 'VTIMEZONE') ?? [];
  if (vcal === undefined || events.length === 0) {
    reply.sabre(
      415,
      EX.unsupportedMediaType,
      'This resource only supports valid iCalendar 2.0 data.',
    );
    return;
  }
  if (!events.some((c) => calendar.components.includes(c.name))) {
    reply.sabre(
      403,
      'Sabre\\CalDAV\\Exception\\InvalidComponentType',
      `iCalendar objects must at least have a component of type ${calendar.components.join(', ')}`,
    );
    return;
  }
  const uids = new Set(events.map((c) => prop(c, 'UID')?.value));
  if (uids.size > 1) {
    reply.sabre(
      415,
      EX.unsupportedMediaType,
      'A calendar object on a CalDAV server may only have components with the same UID.',
    );
    return;
  }
  let changed = false;
  let uid = [...uids][0];
  for (const event of events) {
    if (uid === undefined) uid = `sabre-vobject-${randomUUID()}`;
    if (prop(event, 'UID') === undefined) {
      event.props.unshift({ name: 'UID', params: '', value: uid });
      changed = true;
    }
    if (prop(event, 'DTSTAMP') === undefined) {
      event.props.push({ name: 'DTSTAMP', params: '', value: basic(now) });
      changed = true;
    }
  }
  if (prop(vcal, 'PRODID') === undefined) {
    vcal.props.push({ name: 'PRODID', params: '', value: SABRE_PRODID });
    changed = true;
  }
  for (const [other, object] of calendar.objects)
    if (other !== name && object.uid === uid) {
      reply.sabre(
        400,
        EX.badRequest,
        'Calendar object with uid already exists in this calendar collection.',
      );
      return;
    }
  const etag = newEtag();
  const existed = calendar.objects.has(name);
  calendar.objects.set(name, { data: changed ? writeIcal(vcal) : body, etag, uid });
  // Observed: a body the server had to change is answered without an ETag; an
  // overwrite is 204.
  reply.empty(existed ? 204 : 201, changed ? {} : { ETag: etag, 'OC-ETag': etag });
}

export function getEvent(reply: Reply, calendar: FakeCollection, name: string): void {
  const object = calendar.objects.get(name);
  if (object === undefined) {
    reply.sabre(404, EX.notFound, `Calendar object not found`);
    return;
  }
  reply.send(200, object.data, {
    'Content-Type': 'text/calendar; charset=utf-8; component=vevent',
    ETag: object.etag,
    'OC-ETag': object.etag,
  });
}

const UTC_BASIC = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

function utcOf(value: string | undefined): number | undefined {
  const m = value === undefined ? null : UTC_BASIC.exec(value);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  return Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0, s ?? 0);
}

function find(el: XmlElement | undefined, local: string): XmlElement | undefined {
  if (el === undefined) return undefined;
  for (const c of el.children) {
    if (c.ns === CAL && c.local === local) return c;
    const deeper = find(c, local);
    if (deeper !== undefined) return deeper;
  }
  return undefined;
}

export function reportEvents(
  reply: Reply,
  series: SeriesTraits,
  calendar: FakeCollection,
  href: string,
  body: string,
): void {
  const root = reportRoot(reply, body, CAL, 'calendar-query');
  if (root === undefined) return;
  const range = find(root, 'time-range');
  const expandRange = find(root, 'expand');
  const from = utcOf(range?.attrs.get('start'));
  const to = utcOf(range?.attrs.get('end'));
  const expandFrom = utcOf(expandRange?.attrs.get('start'));
  const expandTo = utcOf(expandRange?.attrs.get('end'));
  if (
    (range !== undefined && (from === undefined || to === undefined)) ||
    (expandRange !== undefined && (expandFrom === undefined || expandTo === undefined))
  ) {
    reply.sabre(
      500,
      'Sabre\\VObject\\InvalidDataException',
      'The supplied iCalendar datetime value is incorrect',
    );
    return;
  }
  const parts: string[] = [];
  for (const [name, object] of calendar.objects) {
    try {
      const vcal = parseIcal(object.data).find((c) => c.name === 'VCALENDAR');
      const events = vcal?.comps.filter((c) => c.name === 'VEVENT') ?? [];
      if (vcal === undefined || events.length === 0) continue;
      if (from !== undefined && to !== undefined && !events.some((e) => inRange(e, from, to)))
        continue;
      let data = object.data;
      if (expandFrom !== undefined && expandTo !== undefined) {
        const expanded: Comp = {
          name: 'VCALENDAR',
          props: [
            { name: 'VERSION', params: '', value: '2.0' },
            { name: 'PRODID', params: '', value: SABRE_PRODID },
            { name: 'CALSCALE', params: '', value: 'GREGORIAN' },
          ],
          comps: events.flatMap((e) => expand(e, expandFrom, expandTo)),
        };
        data = writeIcal(expanded);
      }
      parts.push(
        `<d:response><d:href>${href}${encodeURIComponent(name)}</d:href><d:propstat><d:prop>` +
          `<d:getetag>${escapeXml(object.etag)}</d:getetag><cal:calendar-data>${dataXml(data)}</cal:calendar-data>` +
          '</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>',
      );
    } catch (e) {
      if (!(e instanceof TooManyOccurrences)) throw e;
      // Observed: 34 leaves the runaway event out and answers the rest; 29 fails the
      // whole query, whatever the window, until the event is deleted.
      if (series.runawayRecurrenceLeftOut) continue;
      reply.sabre(
        500,
        'Sabre\\VObject\\Recur\\MaxInstancesExceededException',
        'Recurring events are only allowed to generate 3500',
      );
      return;
    }
  }
  reply.xml(207, `${MULTISTATUS_OPEN}${parts.join('')}</d:multistatus>`);
}

/**
 * A create-only PUT (`If-None-Match: *`) onto an object that exists: answered 412 as
 * Sabre does, for calendars and address books alike. True when it was answered.
 */
export function existsForCreate(
  reply: Reply,
  objects: ReadonlyMap<string, unknown>,
  name: string,
  ifNoneMatch: string | undefined,
): boolean {
  if (ifNoneMatch !== '*' || !objects.has(name)) return false;
  reply.sabre(
    412,
    EX.preconditionFailed,
    'An If-None-Match header was specified, but the ETag matched (or * was specified).',
  );
  return true;
}

/**
 * The root of a REPORT body when it is the query `ns`/`local`; otherwise the answer Sabre
 * gives (400 for XML that does not parse, 415 for another REPORT) is sent and undefined
 * returned. For calendar and address book queries alike.
 */
export function reportRoot(
  reply: Reply,
  body: string,
  ns: string,
  local: string,
): XmlElement | undefined {
  let root: XmlElement;
  try {
    root = parseXml(body);
  } catch (e) {
    if (!(e instanceof XmlParseError)) throw e;
    reply.sabre(400, EX.badRequest, 'The request body is not valid XML');
    return undefined;
  }
  if (root.ns !== ns || root.local !== local) {
    reply.sabre(415, EX.unsupportedMediaType, 'The REPORT is not supported here');
    return undefined;
  }
  return root;
}
