/**
 * Searching one address book: a CardDAV `addressbook-query` REPORT that Nextcloud
 * matches on the full name (FN) and the e-mail addresses, asking back only the name,
 * e-mail addresses and phone numbers (and the note, only when asked).
 *
 * What the server matches (docs/nextcloud-behaviour.md): `contains`, case-insensitive
 * for all of Unicode, accents count and nothing is normalised — "zoe" does not find
 * "Zoë". The query is sent in NFC. `nresults` cuts the answer with no sign of it, so
 * one more card than returned is asked for, and the answer says when there were more.
 *
 * Security: the note is third-party text and is requested only with `includeText`;
 * photos and every other property are never requested. Cards outside the address book
 * reject the reply.
 */
import { all, first, unescapeText } from './content-lines.js';
import { resolveCollection } from './collections.js';
import { NextcloudError } from './errors.js';
import { documentsOf, report } from './groupware-reply.js';
import { groupwareUrl } from './groupware-url.js';
import { decodeHref } from './multistatus.js';
import type { Session } from './session.js';

export interface Contact {
  uid: string | null;
  name: string | null;
  emails: string[];
  phones: string[];
  /** Only with `includeText`. */
  note?: string | null;
}

export const MAX_CONTACTS = 100;
const MAX_REPORT_BYTES = 4 * 1024 * 1024;

/** What the server matched, said in each answer. */
export const MATCHED =
  'matched by Nextcloud on the full name and e-mail addresses, containing the query, ignoring case; accents count (zoe does not find Zoë)';

function escapeXmlText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The addressbook-query REPORT body (exported for the differential tests). */
export function queryBody(query: string, limit: number, includeText: boolean): string {
  const match = (prop: string): string =>
    `<c:prop-filter name="${prop}"><c:text-match collation="i;unicode-casemap" match-type="contains">${escapeXmlText(query)}</c:text-match></c:prop-filter>`;
  return (
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<c:addressbook-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:carddav">' +
    '<d:prop><d:getetag/><c:address-data>' +
    '<c:prop name="FN"/><c:prop name="EMAIL"/><c:prop name="TEL"/>' +
    (includeText ? '<c:prop name="NOTE"/>' : '') +
    '</c:address-data></d:prop>' +
    `<c:filter test="anyof">${match('FN')}${match('EMAIL')}</c:filter>` +
    `<c:limit><c:nresults>${limit}</c:nresults></c:limit>` +
    '</c:addressbook-query>'
  );
}

/** The cards of an addressbook-query reply on the book at `book` (decoded segments). */
export function contactsOf(
  xml: string,
  book: readonly string[],
  origin: string,
  includeText: boolean,
): Contact[] {
  const out: Contact[] = [];
  for (const document of documentsOf(xml, 'contacts', book, origin, 'address-data')) {
    const cards = document.filter((c) => c.name === 'VCARD');
    for (const card of cards) {
      const text = (name: string): string | null => {
        const line = first(card, name);
        return line === undefined ? null : unescapeText(line.value);
      };
      const values = (name: string): string[] =>
        all(card, name)
          .map((l) =>
            unescapeText(l.value)
              .replace(/^mailto:/i, '')
              .replace(/^tel:/i, ''),
          )
          .filter((v) => v !== '');
      out.push({
        uid: text('UID'),
        name: text('FN'),
        emails: values('EMAIL'),
        phones: values('TEL'),
        ...(includeText ? { note: text('NOTE') } : {}),
      });
    }
  }
  return out.sort((a, b) =>
    (a.name ?? '') < (b.name ?? '') ? -1 : (a.name ?? '') > (b.name ?? '') ? 1 : 0,
  );
}

/**
 * Cards of an address book whose full name or an e-mail address contains `query`
 * (Nextcloud's matching, see the top of this file); `truncated` when more than `limit`
 * (default 25) matched.
 */
export async function searchContacts(
  { conn }: Pick<Session, 'conn'>,
  addressbook: string,
  query: string,
  opts: { limit?: number; includeText?: boolean } = {},
  signal?: AbortSignal,
): Promise<{ contacts: Contact[]; truncated: boolean }> {
  const limit = opts.limit ?? 25;
  const includeText = opts.includeText === true;
  const text = query.normalize('NFC');
  if (text.trim() === '')
    throw new NextcloudError(
      'invalid_argument',
      'the query is empty: give part of a name or an e-mail address',
    );
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_CONTACTS)
    throw new NextcloudError(
      'invalid_argument',
      `the limit must be an integer from 1 to ${MAX_CONTACTS}`,
    );
  // The name is checked (and the URL built) before anything is sent.
  const url = groupwareUrl(conn.instance.url, conn.instance.username, 'contacts', [addressbook]);
  await resolveCollection(conn, 'contacts', addressbook, signal);
  // One more than returned: the server's cut is silent.
  const body = queryBody(text, limit + 1, includeText);
  const xml = await report(conn, 'contacts', addressbook, url, body, MAX_REPORT_BYTES, { signal });
  const found = contactsOf(xml, decodeHref(url.pathname, conn.origin), conn.origin, includeText);
  return { contacts: found.slice(0, limit), truncated: found.length > limit };
}
