/**
 * The body of a WebDAV SEARCH (RFC 5323 basicsearch) for the names below one folder,
 * as Nextcloud takes it (docs/nextcloud-behaviour.md, "Search"). Pure; no I/O.
 *
 * Security: every value comes from the agent or the server and goes into XML, so each
 * one is escaped as character data; nothing else is ever interpolated. The term reaches
 * the server's SQL `LIKE`, where `%` and `_` are wildcards and `\` escapes: all three
 * are escaped, so the agent's term is matched literally, as a substring.
 */
import { NextcloudError } from './errors.js';

/** Nextcloud's namespace for the offset in `d:limit` (the SearchDAV library's). */
export const SEARCHDAV_NS = 'https://github.com/icewind1991/SearchDAV/ns';

/** The properties a result carries: what an entry is built from (multistatus.ts toEntry). */
const SELECT =
  '<d:select><d:prop><d:resourcetype/><d:getcontentlength/><d:getlastmodified/><d:getetag/>' +
  '</d:prop></d:select>';

/**
 * Name order, then modification time, so that pages split the same way every time
 * (equal names in different folders are the common tie).
 */
const ORDER =
  '<d:orderby>' +
  '<d:order><d:prop><d:displayname/></d:prop><d:ascending/></d:order>' +
  '<d:order><d:prop><d:getlastmodified/></d:prop><d:ascending/></d:order>' +
  '</d:orderby>';

function invalid(what: string): NextcloudError {
  return new NextcloudError('invalid_argument', `invalid search request: ${what}`);
}

/** Characters XML 1.0 cannot carry at all, escaped or not (and lone surrogates). */
// eslint-disable-next-line no-control-regex
const NOT_IN_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|\p{Cs}/u;

/**
 * Text escaped for XML character data (and attribute values): `& < > " '`. Throws
 * `invalid_argument` on a character XML cannot carry (never dropped or replaced).
 */
export function escapeXmlText(text: string): string {
  if (NOT_IN_XML.test(text)) throw invalid('a character XML cannot carry');
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** The `LIKE` literal that finds `term` anywhere in a name, every character literally. */
export function likeLiteral(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface SearchQuery {
  /** The scope href, relative to the DAV root and not percent-encoded: `/files/<user>/<path>`. */
  scope: string;
  /** The canonical (NFC) search term. */
  term: string;
  /** The searched folder's own file id: Nextcloud counts the folder in the limit, then drops it. */
  folderId: string;
  /** How many results to ask for (1-1000), from the zero-based `offset`. */
  limit: number;
  offset: number;
}

/** The SEARCH body for `query`; throws `invalid_argument` on a value it cannot send. */
export function searchBody(query: SearchQuery): string {
  const { scope, term, folderId, limit, offset } = query;
  if (!scope.startsWith('/files/')) throw invalid('the scope is not below /files/');
  if (term === '') throw invalid('an empty term');
  if (!/^\d{1,20}$/.test(folderId)) throw invalid('the folder id is not a number');
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
    throw invalid('the limit must be an integer from 1 to 1000');
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw invalid('the offset must be a non-negative integer');
  return (
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">' +
    '<d:basicsearch>' +
    SELECT +
    // Depth is ignored by Nextcloud (always recursive); infinity says what happens.
    `<d:from><d:scope><d:href>${escapeXmlText(scope)}</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
    '<d:where><d:and>' +
    `<d:like><d:prop><d:displayname/></d:prop><d:literal>${escapeXmlText(likeLiteral(term))}</d:literal></d:like>` +
    `<d:not><d:eq><d:prop><oc:fileid/></d:prop><d:literal>${folderId}</d:literal></d:eq></d:not>` +
    '</d:and></d:where>' +
    ORDER +
    `<d:limit><d:nresults>${limit}</d:nresults>` +
    `<sd:firstresult xmlns:sd="${SEARCHDAV_NS}">${offset}</sd:firstresult></d:limit>` +
    '</d:basicsearch></d:searchrequest>'
  );
}
