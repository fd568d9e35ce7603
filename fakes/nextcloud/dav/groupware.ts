/**
 * Requests below `/remote.php/dav/calendars/<user>/` and
 * `/remote.php/dav/addressbooks/users/<user>/`: PROPFIND of the home, REPORT on a
 * collection, PUT and GET of an object in one, DELETE of a collection (tests clean up).
 * Another user's home answers 404, as Nextcloud's principal lookup does.
 */
import type { IncomingMessage } from 'node:http';
import type { FakeCollection } from '../groupware/collections.js';
import { EX, type Reply } from '../reply.js';
import type { FakeState } from '../state.js';
import { readSmallBody } from './body.js';
import { calendarNotFound, getEvent, putEvent, reportEvents } from './caldav.js';
import { calendarTrashbin, eventOf, refOf, trashEvent, valueOf } from './calendar-trashbin.js';
import { putCard, reportCards } from './carddav.js';
import { header } from './context.js';
import { homeHref, homeListing, requestedProps } from './groupware-props.js';

export interface GroupwareContext {
  state: FakeState;
  reply: Reply;
  req: IncomingMessage;
  user: string;
  kind: FakeCollection['kind'];
  /** Decoded segments below the home: [] the home, [c] a collection, [c, o] an object. */
  segments: string[];
}

function missing(ctx: GroupwareContext, uri: string): void {
  if (ctx.kind === 'calendar') calendarNotFound(ctx.reply, uri);
  else ctx.reply.sabre(404, EX.notFound, `Addressbook with name '${uri}' could not be found`);
}

export async function groupware(ctx: GroupwareContext): Promise<void> {
  const { reply, req, state, kind } = ctx;
  const [uri, object, ...rest] = ctx.segments;
  const method = req.method ?? '';
  const body = (await readSmallBody(req)) ?? '';
  if (uri === undefined) {
    if (method !== 'PROPFIND') {
      reply.sabre(
        501,
        EX.notImplemented,
        `There was no plugin in the system that was willing to handle this ${method} method.`,
      );
      return;
    }
    const depth = header(ctx, 'depth') === '0' ? '0' : '1';
    const asked = requestedProps(body);
    if (asked === undefined) {
      reply.sabre(400, EX.badRequest, 'The request body is not a valid propfind');
      return;
    }
    reply.xml(207, homeListing(state.groupware, kind, ctx.user, asked, depth));
    return;
  }
  if (kind === 'calendar' && uri === 'trashbin')
    return calendarTrashbin(ctx, object === undefined ? [] : [object, ...rest], body);
  const collection = state.groupware.find(kind, uri);
  if (collection === undefined || rest.length > 0) return missing(ctx, uri);
  const href = `${homeHref(kind, ctx.user)}${encodeURIComponent(uri)}/`;
  if (object === undefined) {
    if (method === 'REPORT')
      return kind === 'calendar'
        ? reportEvents(reply, ctx.state.series, collection, href, body)
        : reportCards(reply, collection, href, body);
    if (method === 'DELETE') {
      state.groupware.remove(kind, uri);
      reply.empty(204);
      return;
    }
  } else if (method === 'PUT') {
    const ifNoneMatch = header(ctx, 'if-none-match');
    const existed = collection.objects.has(object);
    if (kind === 'calendar') putEvent(reply, collection, object, body, ifNoneMatch, state.now());
    else putCard(reply, collection, object, body, ifNoneMatch);
    return noteWritten(ctx, collection, object, existed);
  } else if (method === 'DELETE') {
    if (kind === 'calendar') return trashEvent(ctx, collection, object);
    return deleteCard(ctx, collection, object);
  } else if (method === 'GET') {
    return getEvent(reply, collection, object);
  }
  reply.sabre(
    501,
    EX.notImplemented,
    `There was no plugin in the system that was willing to handle this ${method} method.`,
  );
}

/** A write that went through is recorded as the Activity app records it. */
function noteWritten(
  ctx: GroupwareContext,
  collection: FakeCollection,
  object: string,
  existed: boolean,
): void {
  const stored = collection.objects.get(object);
  if (ctx.reply.res.statusCode >= 300 || stored === undefined) return;
  const change = existed ? 'updated' : 'created';
  if (ctx.kind === 'calendar')
    ctx.state.activity.event(change, ctx.user, refOf(collection), eventOf(stored.data));
  else ctx.state.activity.card(change, ctx.user, refOf(collection), cardOf(stored.data));
}

/** Address books keep no trash bin: a deleted card is gone (observed). */
function deleteCard(ctx: GroupwareContext, book: FakeCollection, object: string): void {
  const stored = book.objects.get(object);
  if (stored === undefined || book.readOnly) {
    ctx.reply.sabre(404, EX.notFound, 'Card not found');
    return;
  }
  book.objects.delete(object);
  ctx.state.activity.card('deleted', ctx.user, refOf(book), cardOf(stored.data));
  ctx.reply.empty(204);
}

function cardOf(data: string): { uid: string; name: string } {
  return { uid: valueOf(data, 'UID'), name: valueOf(data, 'FN') };
}
