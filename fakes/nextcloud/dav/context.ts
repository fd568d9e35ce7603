/** What every WebDAV handler gets: the authenticated user and the resolved target. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { encodeHrefSegment, type UserPath } from '../paths.js';
import type { Reply } from '../reply.js';
import type { FakeState } from '../state.js';

export interface DavContext {
  state: FakeState;
  reply: Reply;
  req: IncomingMessage;
  res: ServerResponse;
  user: string;
  target: UserPath;
  /** `/remote.php/dav/files/<user>`, Sabre-encoded, no trailing slash. */
  base: string;
}

export function davBase(user: string): string {
  return `/remote.php/dav/files/${encodeHrefSegment(user)}`;
}

/** Sabre href: the request's own spelling, lowercase escapes, folders end in `/`. */
export function hrefOf(base: string, spelled: readonly string[], folder: boolean): string {
  const tail = spelled.map(encodeHrefSegment).join('/');
  if (tail === '') return `${base}/`;
  return `${base}/${tail}${folder ? '/' : ''}`;
}

export function header(ctx: { req: IncomingMessage }, name: string): string | undefined {
  const v = ctx.req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Sabre's NotFound message names the path as it was asked for. */
export function notFound(ctx: DavContext, rel = ctx.target.rel): void {
  ctx.reply.sabre(
    404,
    'Sabre\\DAV\\Exception\\NotFound',
    `File with name ${rel} could not be located`,
  );
}
