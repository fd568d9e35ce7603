/**
 * The two things every CalDAV and CardDAV `REPORT` shares: sending it (Depth 1, an XML
 * body, idempotent, its errors worded for the collection) and reading its reply into the
 * documents each object holds.
 *
 * Security: every object's href must be a direct child of the collection asked, or the
 * whole reply is rejected; a document that does not parse rejects it too.
 */
import type { NextcloudConnection } from './connection.js';
import { ContentLineError, parseComponents, type Component } from './content-lines.js';
import { NextcloudError } from './errors.js';
import { collectionError } from './groupware-errors.js';
import type { CollectionKind } from './groupware-url.js';
import { decodeHref, parseMultistatus } from './multistatus.js';

const WHAT: Record<CollectionKind, { object: string; collection: string }> = {
  calendar: { object: 'an event', collection: 'the calendar' },
  contacts: { object: 'a card', collection: 'the address book' },
};

/** The top components of each object's `prop` (`calendar-data`, `address-data`) in a reply. */
export function documentsOf(
  xml: string,
  kind: CollectionKind,
  collection: readonly string[],
  origin: string,
  prop: string,
): Component[][] {
  const { object, collection: where } = WHAT[kind];
  const out: Component[][] = [];
  for (const response of parseMultistatus(xml, { groupware: true })) {
    const segments = decodeHref(response.href, origin);
    if (segments.length !== collection.length + 1 || collection.some((s, i) => s !== segments[i]))
      throw new NextcloudError(
        'bad_response',
        `Nextcloud answered with ${object} outside ${where}: not retried; report this to the owner`,
      );
    const data = response.props.get(prop);
    if (typeof data !== 'string') continue;
    try {
      out.push(parseComponents(data));
    } catch (err) {
      if (!(err instanceof ContentLineError)) throw err;
      throw new NextcloudError(
        'bad_response',
        `Nextcloud sent ${object} the broker cannot read (${err.message}): not retried; report this to the owner`,
      );
    }
  }
  return out;
}

/** A REPORT on collection `name` at `url`; its whole reply, or the collection's error. */
export async function report(
  conn: NextcloudConnection,
  kind: CollectionKind,
  name: string,
  url: URL,
  body: string,
  limit: number,
  opts: { signal?: AbortSignal | undefined; permanentServerError?: RegExp } = {},
): Promise<string> {
  try {
    const { text } = await conn.exchange(
      {
        method: 'REPORT',
        url,
        headers: { 'content-type': 'application/xml; charset=utf-8', depth: '1' },
        body,
      },
      {
        idempotent: true,
        ok: [207],
        ctx: { verb: 'REPORT', instance: conn.name, path: name },
        signal: opts.signal,
        ...(opts.permanentServerError === undefined
          ? {}
          : { permanentServerError: opts.permanentServerError }),
      },
      limit,
    );
    return text;
  } catch (err) {
    throw collectionError(err, kind, name, conn.name);
  }
}
