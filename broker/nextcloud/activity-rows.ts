/**
 * The account's own changes, one Activity row each (docs/nextcloud-behaviour.md "The
 * Activity app"). The API merges back-to-back rows of one page into one entry (the same
 * file changed three times is one "You changed {file1}", with the time of the last), so
 * an entry is not a change: a change by someone else with the broker's app password
 * would hide inside an entry whose last change is the broker's. A page of one row cannot
 * merge. So a page is taken as it is only when it is shown to hold exactly one row per
 * entry; otherwise its stretch is read again one row at a time:
 *
 * - a page with a `Link` read exactly `limit` rows: one entry per row iff `limit` entries;
 * - the last page read an unknown number of rows: asked again with `limit` = its entries,
 *   it read no more iff that answer has no `Link` (a row added in between also gives a
 *   `Link`, and the stretch is read row by row: safe, only slower).
 *
 * A row no provider could word is dropped by Nextcloud (the page reads it, shows
 * nothing); the counts then differ and the stretch is read row by row too, where that
 * row is an empty page that still moves the cursor (`lastGiven`).
 */
import { readActivity, type Activity } from './activity.js';
import type { Session } from './session.js';

/** Rows per page when the stream is read whole (Nextcloud's most). */
export const ROWS_PER_PAGE = 200;

export interface ActivityRowsQuery {
  /** The last row already read (exclusive); absent: from the oldest (`asc`) or newest. */
  readonly since?: string;
  readonly sort: 'asc' | 'desc';
}

export interface ActivityRows {
  /** One change each, in the order asked for. */
  readonly rows: readonly Activity[];
  /** Where the next call starts (the last row read); undefined: nothing more now. */
  readonly next: string | undefined;
  /** The last row read, also when it showed nothing (undefined: no row was read). */
  readonly lastRead: string | undefined;
  /** The server's clock at its last answer (ms), when it said. */
  readonly serverTime: number | undefined;
}

/** Up to one page of the account's own changes (`filter=self`), never merged. */
export async function readActivityRows(
  session: Pick<Session, 'conn'>,
  query: ActivityRowsQuery,
  signal?: AbortSignal,
): Promise<ActivityRows> {
  const base = { filter: 'self', sort: query.sort, ...since(query.since) } as const;
  const page = await readActivity(session, { ...base, limit: ROWS_PER_PAGE }, signal);
  const entries = page.activities.length;
  const oneRowEach =
    entries === 0
      ? true
      : page.next !== undefined
        ? entries === ROWS_PER_PAGE
        : (await readActivity(session, { ...base, limit: entries }, signal)).next === undefined;
  if (oneRowEach)
    return {
      rows: page.activities,
      next: page.next,
      lastRead: page.lastGiven ?? page.activities.at(-1)?.id,
      serverTime: page.serverTime,
    };
  return rowByRow(session, query, page.lastGiven, signal);
}

/** The stretch of a merged page again, one row per request, up to its last row. */
async function rowByRow(
  session: Pick<Session, 'conn'>,
  query: ActivityRowsQuery,
  until: string | undefined,
  signal: AbortSignal | undefined,
): Promise<ActivityRows> {
  const rows: Activity[] = [];
  let at = query.since;
  let next: string | undefined;
  let serverTime: number | undefined;
  // Bounded: the page held at most ROWS_PER_PAGE rows.
  for (let read = 0; read < ROWS_PER_PAGE; read++) {
    const one = await readActivity(
      session,
      { filter: 'self', sort: query.sort, limit: 1, ...since(at) },
      signal,
    );
    rows.push(...one.activities);
    serverTime = one.serverTime ?? serverTime;
    const last = one.lastGiven ?? one.activities.at(-1)?.id;
    // Nothing read (or no progress): the stream ends here for now.
    if (last === undefined || last === at) {
      next = undefined;
      break;
    }
    at = last;
    next = one.next === undefined ? undefined : at;
    if (next === undefined || at === until) break;
  }
  return { rows, next, lastRead: at === query.since ? undefined : at, serverTime };
}

function since(id: string | undefined): { since?: string } {
  return id === undefined ? {} : { since: id };
}
