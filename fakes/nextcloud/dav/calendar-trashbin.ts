/**
 * `/remote.php/dav/calendars/<user>/trashbin/` as Nextcloud 34.0.1 and 29.0.5 answer it
 * (see ../groupware/calendar-trash.ts for the model): `objects/` lists its items only by
 * a `calendar-query` REPORT (a PROPFIND is 501), an item is read with GET, restored with
 * MOVE to `restore/<anything>` (403 onto a taken name) and deleted for good with DELETE.
 * A DELETE of an event in a calendar moves it here (`trashEvent`).
 */
import type { IncomingMessage } from 'node:http';
import type { FakeCollection } from '../groupware/collections.js';
import { collectionNumber } from '../groupware/numbers.js';
import { EX, type Reply } from '../reply.js';
import type { FakeState } from '../state.js';
import { escapeXml, NS, type XmlElement } from '../xml.js';
import { reportRoot } from './caldav.js';
import { header } from './context.js';
import { CAL, MULTISTATUS_OPEN, response } from './groupware-props.js';

const NEXTCLOUD_COM = 'http://nextcloud.com/ns';
const EVENT_TYPE = 'text/calendar; charset=utf-8; component=vevent';

export interface CalendarTrashContext {
  state: FakeState;
  reply: Reply;
  req: IncomingMessage;
  user: string;
}

function notImplemented(reply: Reply, method: string): void {
  reply.sabre(
    501,
    EX.notImplemented,
    `There was no plugin in the system that was willing to handle this ${method} method.`,
  );
}

/** The props a REPORT asks for (`<d:prop>` of its root), in order. */
function asked(root: XmlElement): string[] {
  const prop = root.children.find((c) => c.ns === NS.dav && c.local === 'prop');
  return (prop?.children ?? []).map((c) => `{${c.ns}}${c.local}`);
}

function report(ctx: CalendarTrashContext, body: string): void {
  const root = reportRoot(ctx.reply, body, CAL, 'calendar-query');
  if (root === undefined) return;
  const wanted = asked(root);
  const base = `/remote.php/dav/calendars/${encodeURIComponent(ctx.user)}/trashbin/objects/`;
  const parts = ctx.state.calendarTrash.list().map((item) =>
    response(
      `${base}${item.number}.ics`,
      new Map([
        [`{${NS.dav}}getetag`, escapeXml(item.object.etag)],
        [`{${NS.dav}}getcontenttype`, EVENT_TYPE],
        [`{${NEXTCLOUD_COM}}calendar-uri`, escapeXml(item.calendar.uri)],
        [
          `{${NEXTCLOUD_COM}}deleted-at`,
          new Date(item.deletedAt).toISOString().replace(/\.\d{3}Z$/, '+00:00'),
        ],
        // Observed: with bare LF line ends (a calendar's own REPORT keeps the CRs).
        [`{${CAL}}calendar-data`, escapeXml(item.object.data.replace(/\r\n/g, '\n'))],
      ]),
      wanted,
    ),
  );
  ctx.reply.xml(207, `${MULTISTATUS_OPEN}${parts.join('')}</d:multistatus>`);
}

/** Requests below the trash bin: `segments` after `trashbin/`. */
export function calendarTrashbin(
  ctx: CalendarTrashContext,
  segments: readonly string[],
  body: string,
): void {
  const method = ctx.req.method ?? '';
  const [first, name, ...rest] = segments;
  if (first !== 'objects' || rest.length > 0) return notImplemented(ctx.reply, method);
  if (name === undefined) {
    if (method === 'REPORT') return report(ctx, body);
    return notImplemented(ctx.reply, method);
  }
  const number = /^(\d+)\.ics$/.exec(name)?.[1];
  const item = number === undefined ? undefined : ctx.state.calendarTrash.get(Number(number));
  if (item === undefined) {
    ctx.reply.sabre(404, EX.notFound, `Node with name '${name}' could not be found`);
    return;
  }
  if (method === 'GET') {
    ctx.reply.send(200, item.object.data, {
      'Content-Type': EVENT_TYPE,
      ETag: item.object.etag,
      'OC-ETag': item.object.etag,
    });
    return;
  }
  if (method === 'MOVE') {
    const target = (header(ctx, 'Destination') ?? '').replace(/^[a-z]+:\/\/[^/]*/i, '');
    if (
      !target.startsWith(
        `/remote.php/dav/calendars/${encodeURIComponent(ctx.user)}/trashbin/restore/`,
      )
    ) {
      ctx.reply.sabre(403, EX.forbidden, 'Permission denied to move this calendar object');
      return;
    }
    const restored = ctx.state.calendarTrash.restore(item.number);
    if (restored === 'taken') {
      ctx.reply.sabre(
        403,
        EX.forbidden,
        `Can not restore calendar ${item.number} because a calendar object with the URI ${item.name} already exists`,
      );
      return;
    }
    ctx.state.activity.event('restored', ctx.user, refOf(item.calendar), eventOf(item.object.data));
    ctx.reply.empty(201);
    return;
  }
  return notImplemented(ctx.reply, method);
}

/** A DELETE of an event: to the trash bin (204), 404 when missing, 403 when the name is taken there. */
export function trashEvent(
  ctx: CalendarTrashContext,
  calendar: FakeCollection,
  name: string,
): void {
  const data = calendar.objects.get(name)?.data;
  const trashed = ctx.state.calendarTrash.trash(calendar, name);
  if (trashed === undefined || data === undefined) {
    ctx.reply.sabre(404, EX.notFound, 'Calendar object not found');
    return;
  }
  if (trashed === 'taken') {
    ctx.reply.sabre(
      403,
      EX.forbidden,
      `A calendar object with URI ${name.replace(/\.ics$/, '')}-deleted.ics already exists in calendar ${collectionNumber(calendar)}, therefore this object can't be moved into the trashbin`,
    );
    return;
  }
  ctx.state.activity.event('deleted', ctx.user, refOf(calendar), eventOf(data));
  ctx.reply.empty(204);
}

/** How activities name a calendar or address book. */
export function refOf(collection: FakeCollection): { id: number; name: string } {
  return { id: collectionNumber(collection), name: collection.displayName };
}

/** A property's value in an iCalendar or vCard text ('' when absent). */
export function valueOf(data: string, name: string): string {
  const line = new RegExp(`^${name}(?:;[^:\\r\\n]*)?:(.*?)\\r?$`, 'm').exec(data);
  return line?.[1] ?? '';
}

/** How activities name an event: its UID and SUMMARY. */
export function eventOf(data: string): { uid: string; summary: string } {
  return { uid: valueOf(data, 'UID'), summary: valueOf(data, 'SUMMARY') };
}
