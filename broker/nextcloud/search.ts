/**
 * Names below a folder that match a term, through WebDAV SEARCH (docs/nextcloud-behaviour.md,
 * "Search"): the folder is looked at first (a missing folder or a file gets a clear
 * answer, and its file id keeps it out of the server's count), then one SEARCH asks for
 * one result more than a page, from the cursor's offset.
 *
 * Security decisions, each marked below: only results strictly below the folder are
 * kept (whatever the server sends; the others are dropped, counted and logged); only
 * names that match by the broker's own rule are kept (base/search-term.ts), so the
 * answer does not depend on the server's database; a cursor belongs to one instance,
 * folder and term.
 */
import { nameMatches } from '../base/search-term.js';
import { escapeForReason } from '../base/text.js';
import { MAX_SMALL_REPLY_BYTES, type NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import {
  decodeHref,
  parseMultistatus,
  selfResponse,
  textProp,
  toEntry,
  type DavResponse,
  type Entry,
} from './multistatus.js';
import { searchBody } from './search-query.js';
import type { Session } from './session.js';
import { davSearchUrl, searchScope } from './url.js';

export const MAX_SEARCH_PAGE_SIZE = 200;
/** A reply to one page larger than this is refused rather than held in memory. */
const MAX_SEARCH_REPLY_BYTES = 8 * 1024 * 1024;
/** How many dropped hrefs the log line names. */
const LOGGED_HREFS = 3;

export interface SearchPage {
  entries: Entry[];
  next?: string;
  /** Results the server sent from outside the folder (dropped). */
  outside: number;
}

/**
 * The results of one SEARCH reply that lie strictly below the folder, with their
 * canonical paths; every other href (outside the folder, the folder itself, another
 * server, a malformed escape) is returned in `outside`.
 */
export function resultsBelow(
  responses: readonly DavResponse[],
  folderPath: string,
  folderSegments: readonly string[],
  origin: string,
): { entries: Entry[]; outside: string[] } {
  const folder = folderSegments.map((s) => s.normalize('NFC'));
  const entries: Entry[] = [];
  const outside: string[] = [];
  for (const response of responses) {
    let segments: string[];
    try {
      segments = decodeHref(response.href, origin).map((s) => s.normalize('NFC'));
    } catch (error) {
      if (!(error instanceof NextcloudError)) throw error;
      outside.push(response.href);
      continue;
    }
    // Security: strictly below the folder, compared by whole components: a search of
    // `Docs` keeps nothing from `Docs2/`, from a parent, or the folder itself.
    if (segments.length <= folder.length || !folder.every((s, i) => segments[i] === s)) {
      outside.push(response.href);
      continue;
    }
    const below = segments.slice(folder.length).join('/');
    const name = segments[segments.length - 1] as string;
    entries.push(
      toEntry(name, folderPath === '' ? below : `${folderPath}/${below}`, response.props),
    );
  }
  return { entries, outside };
}

/** The folder's file id and decoded URL segments, after checking that `path` is a folder. */
async function lookAtFolder(
  conn: NextcloudConnection,
  path: string,
  signal?: AbortSignal,
): Promise<{ id: string; segments: string[] }> {
  const url = conn.davUrl(path);
  const segments = decodeHref(url.pathname, conn.origin);
  const text = await conn.propfind(url, '0', path, MAX_SMALL_REPLY_BYTES, signal);
  const self = selfResponse(parseMultistatus(text), segments, conn.origin);
  if (toEntry('', path, self.props).kind !== 'folder')
    throw new NextcloudError(
      'not_folder',
      `'${path}' is a file, not a folder: search the folder that holds it`,
    );
  const id = textProp(self.props, 'fileid');
  if (id === null || !/^\d{1,20}$/.test(id))
    throw new NextcloudError(
      'bad_response',
      `Nextcloud did not give the file id of '${path}': not retried; report this to the owner`,
    );
  return { id, segments };
}

/**
 * One page of the names below `path` ('' = the whole account) that contain `term` (the
 * canonical term, see base/search-term.ts); `pageSize` 1-200. `next` is a signed cursor
 * for this instance, folder and term only.
 */
export async function searchFolder(
  { conn, cursors }: Pick<Session, 'conn' | 'cursors'>,
  path: string,
  term: string,
  cursor?: string,
  pageSize = 100,
  signal?: AbortSignal,
): Promise<SearchPage> {
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_SEARCH_PAGE_SIZE)
    throw new NextcloudError(
      'invalid_argument',
      `the page size must be an integer from 1 to ${MAX_SEARCH_PAGE_SIZE}`,
    );
  const offset = cursor === undefined ? 0 : cursors.decode(cursor, path, term);
  const folder = await lookAtFolder(conn, path, signal);
  // One result more than a page says whether another page exists (the server gives no total).
  const body = searchBody({
    scope: searchScope(conn.instance.username, path),
    term,
    folderId: folder.id,
    limit: pageSize + 1,
    offset,
  });
  const { text } = await conn.exchange(
    {
      method: 'SEARCH',
      url: davSearchUrl(conn.instance.url),
      headers: { 'content-type': 'application/xml; charset=utf-8' },
      body,
    },
    { idempotent: true, ok: [207], ctx: { verb: 'SEARCH', instance: conn.name, path }, signal },
    MAX_SEARCH_REPLY_BYTES,
  );
  const responses = parseMultistatus(text);
  const page = responses.slice(0, pageSize);
  const { entries, outside } = resultsBelow(page, path, folder.segments, conn.origin);
  if (outside.length > 0) {
    conn.logger.warn('nextcloud answered a search with results outside the folder; dropped', {
      instance: conn.name,
      path,
      dropped: outside.length,
      hrefs: outside.slice(0, LOGGED_HREFS).map((href) => escapeForReason(href, 200)),
    });
  }
  // Security: the server's database decides what LIKE matches; keep what our rule matches.
  const matching = entries.filter((e) => nameMatches(e.name, term));
  const result: SearchPage = { entries: matching, outside: outside.length };
  return responses.length > pageSize
    ? { ...result, next: cursors.encode(path, offset + pageSize, term) }
    : result;
}
