/**
 * Calendars and address books on the real server, for tests: `occ` makes them (a new
 * user has none), WebDAV fills and removes them. The kit's reset does not touch them, so
 * every test removes what it made; names carry a random part so that a run cut short
 * leaves nothing a later run trips over.
 */
import { randomBytes } from 'node:crypto';
import { send, type RawResponse } from './http.js';
import type { Account, RealServer } from './server.js';

export { ics, vcard } from '../../support/ical.js';

export type Home = 'calendars' | 'addressbooks';

/** A name no earlier run used: `<prefix>-<hex>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export function collectionTarget(home: Home, user: string, name: string): string {
  const u = encodeURIComponent(user);
  return home === 'calendars'
    ? `/remote.php/dav/calendars/${u}/${encodeURIComponent(name)}/`
    : `/remote.php/dav/addressbooks/users/${u}/${encodeURIComponent(name)}/`;
}

export async function createCalendar(
  server: RealServer,
  user: string,
  name: string,
): Promise<void> {
  await server.occ('dav:create-calendar', user, name);
}

export async function createAddressBook(
  server: RealServer,
  user: string,
  name: string,
): Promise<void> {
  await server.occ('dav:create-addressbook', user, name);
}

/** Removes a calendar (past the calendar trash bin) or an address book; a missing one is fine. */
export async function removeCollection(
  url: string,
  account: Account,
  home: Home,
  name: string,
): Promise<void> {
  const res = await send(url, {
    method: 'DELETE',
    target: collectionTarget(home, account.user, name),
    headers: home === 'calendars' ? { 'X-NC-CalDAV-No-Trashbin': '1' } : {},
    auth: account,
  });
  if (res.status !== 204 && res.status !== 404)
    throw new Error(`removing ${home}/${name}: ${res.status} ${res.text.slice(0, 200)}`);
}

/** PUTs an `.ics` or `.vcf` into a collection (create only); throws unless 201. */
export async function putObject(
  url: string,
  account: Account,
  home: Home,
  collection: string,
  object: string,
  body: string,
): Promise<RawResponse> {
  const res = await send(url, {
    method: 'PUT',
    target: `${collectionTarget(home, account.user, collection)}${encodeURIComponent(object)}`,
    headers: {
      'Content-Type':
        home === 'calendars' ? 'text/calendar; charset=utf-8' : 'text/vcard; charset=utf-8',
      'If-None-Match': '*',
    },
    body,
    auth: account,
  });
  if (res.status !== 201)
    throw new Error(`PUT ${collection}/${object}: ${res.status} ${res.text.slice(0, 200)}`);
  return res;
}

/** `owner` shares their calendar with `sharee` (read-write unless `readOnly`). */
export async function shareCalendar(
  url: string,
  owner: Account,
  sharee: string,
  name: string,
  readOnly = false,
): Promise<void> {
  const res = await send(url, {
    method: 'POST',
    target: collectionTarget('calendars', owner.user, name),
    headers: { 'Content-Type': 'application/xml' },
    body:
      '<o:share xmlns:d="DAV:" xmlns:o="http://owncloud.org/ns"><o:set>' +
      `<d:href>principal:principals/users/${sharee}</d:href>${readOnly ? '' : '<o:read-write/>'}` +
      '</o:set></o:share>',
    auth: owner,
  });
  if (res.status !== 200) throw new Error(`sharing calendar ${name}: ${res.status}`);
}
