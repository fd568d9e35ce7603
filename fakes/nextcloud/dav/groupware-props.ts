/**
 * PROPFIND of a calendar or address book home, as Nextcloud answers it: the home first,
 * then each collection (calendars: also the scheduling inbox and outbox and the calendar
 * trash bin); a property a resource lacks goes to a 404 propstat.
 */
import type { FakeCollection, Groupware } from '../groupware/collections.js';
import { encodeHrefSegment } from '../paths.js';
import { escapeXml, NS, parseXml, XmlParseError } from '../xml.js';

export const CAL = 'urn:ietf:params:xml:ns:caldav';
export const CARD = 'urn:ietf:params:xml:ns:carddav';

export const MULTISTATUS_OPEN =
  '<d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:cal="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:card="urn:ietf:params:xml:ns:carddav" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">';

const PREFIX = new Map([
  [NS.dav, 'd'],
  [CAL, 'cal'],
  [CARD, 'card'],
  [NS.oc, 'oc'],
  [NS.nc, 'nc'],
]);

/** `{ns}local` → `p:local` (with its own xmlns when the namespace has no prefix here). */
function qname(clark: string): { open: string; close: string } {
  const m = /^\{([^}]*)\}(.*)$/.exec(clark);
  const ns = m?.[1] ?? '';
  const local = m?.[2] ?? clark;
  const prefix = PREFIX.get(ns);
  return prefix === undefined
    ? { open: `x1:${local} xmlns:x1="${escapeXml(ns)}"`, close: `x1:${local}` }
    : { open: `${prefix}:${local}`, close: `${prefix}:${local}` };
}

function element(clark: string, inner: string): string {
  const q = qname(clark);
  return inner === '' ? `<${q.open}/>` : `<${q.open}>${inner}</${q.close}>`;
}

/** The props of a PROPFIND body; undefined when it is not one. */
export function requestedProps(body: string): string[] | undefined {
  try {
    const root = parseXml(body);
    const prop = root.children.find((c) => c.ns === NS.dav && c.local === 'prop');
    return prop?.children.map((c) => `{${c.ns}}${c.local}`);
  } catch (e) {
    if (e instanceof XmlParseError) return undefined;
    throw e;
  }
}

/** One `<d:response>` with a 200 propstat of what is known and a 404 one of the rest. */
export function response(
  href: string,
  known: ReadonlyMap<string, string>,
  asked: readonly string[],
): string {
  const found = asked.filter((p) => known.has(p));
  const missing = asked.filter((p) => !known.has(p));
  const stat = (props: string[], status: string, value: (p: string) => string): string =>
    props.length === 0
      ? ''
      : `<d:propstat><d:prop>${props.map((p) => element(p, value(p))).join('')}</d:prop><d:status>HTTP/1.1 ${status}</d:status></d:propstat>`;
  return `<d:response><d:href>${href}</d:href>${stat(found, '200 OK', (p) => known.get(p) ?? '')}${stat(missing, '404 Not Found', () => '')}</d:response>`;
}

function collectionProps(c: FakeCollection): Map<string, string> {
  const type =
    c.kind === 'calendar' ? '<d:collection/><cal:calendar/>' : '<d:collection/><card:addressbook/>';
  const props = new Map([
    [`{${NS.dav}}resourcetype`, type],
    [`{${NS.dav}}displayname`, escapeXml(c.displayName)],
  ]);
  if (c.owner !== undefined) props.set(`{${NS.oc}}owner-principal`, escapeXml(c.owner));
  if (c.kind === 'calendar')
    props.set(
      `{${CAL}}supported-calendar-component-set`,
      c.components.map((n) => `<cal:comp name="${n}"/>`).join(''),
    );
  return props;
}

/** The home's href: `/remote.php/dav/calendars/<user>/` or `…/addressbooks/users/<user>/`. */
export function homeHref(kind: FakeCollection['kind'], user: string): string {
  const u = encodeHrefSegment(user);
  return kind === 'calendar'
    ? `/remote.php/dav/calendars/${u}/`
    : `/remote.php/dav/addressbooks/users/${u}/`;
}

/** The multistatus of a Depth 0 or 1 PROPFIND of the home. */
export function homeListing(
  groupware: Groupware,
  kind: FakeCollection['kind'],
  user: string,
  asked: readonly string[],
  depth: '0' | '1',
): string {
  const home = homeHref(kind, user);
  const parts = [response(home, new Map([[`{${NS.dav}}resourcetype`, '<d:collection/>']]), asked)];
  if (depth === '1') {
    for (const c of groupware.collections.filter((x) => x.kind === kind))
      parts.push(response(`${home}${encodeHrefSegment(c.uri)}/`, collectionProps(c), asked));
    if (kind === 'calendar') {
      const special: [string, string][] = [
        ['inbox', '<d:collection/><cal:schedule-inbox/>'],
        ['outbox', '<d:collection/><cal:schedule-outbox/>'],
        ['trashbin', '<d:collection/><x1:trash-bin xmlns:x1="http://nextcloud.com/ns"/>'],
      ];
      for (const [name, type] of special)
        parts.push(
          response(`${home}${name}/`, new Map([[`{${NS.dav}}resourcetype`, type]]), asked),
        );
    }
  }
  return `${MULTISTATUS_OPEN}${parts.join('')}</d:multistatus>`;
}
