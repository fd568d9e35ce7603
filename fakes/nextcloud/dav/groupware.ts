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
    return kind === 'calendar'
      ? putEvent(reply, collection, object, body, ifNoneMatch, state.now())
      : putCard(reply, collection, object, body, ifNoneMatch);
  } else if (method === 'GET') {
    return getEvent(reply, collection, object);
  }
  reply.sabre(
    501,
    EX.notImplemented,
    `There was no plugin in the system that was willing to handle this ${method} method.`,
  );
}
