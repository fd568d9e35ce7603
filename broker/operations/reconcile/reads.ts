/**
 * How a reconciliation reads the account's own changes (broker/nextcloud/activity-rows.ts
 * gives them one row each): on from the cursor, back to a time, or only where the stream
 * stands now (the first pass, which sets the cursor).
 */
import type { Activity } from '../../nextcloud/client.js';
import type { NextcloudPort } from '../ports.js';

/** The most rows one pass reads; the next pass goes on from there. */
export const MAX_ROWS_PER_PASS = 10_000;

/** What a pass read. */
export interface Read {
  readonly rows: readonly Activity[];
  /** The last row read (where the cursor goes). */
  readonly lastRead: string | undefined;
  /** The server's clock at the last answer. */
  readonly serverTime: number | undefined;
}

type Rows = Pick<NextcloudPort, 'activity' | 'activityRows'>;

/** The newest row now (the first pass starts after it). */
export async function newest(client: Rows): Promise<Read> {
  const page = await client.activity({ filter: 'self', sort: 'desc', limit: 1 });
  return {
    rows: [],
    lastRead: page.lastGiven ?? page.activities[0]?.id,
    serverTime: page.serverTime,
  };
}

/** Every row after `after` (oldest first), up to MAX_ROWS_PER_PASS. */
export async function readOn(client: Rows, after: string | null): Promise<Read> {
  const rows: Activity[] = [];
  let since = after ?? undefined;
  let serverTime: number | undefined;
  for (;;) {
    const page = await client.activityRows({
      sort: 'asc',
      ...(since === undefined ? {} : { since }),
    });
    rows.push(...page.rows);
    serverTime = page.serverTime ?? serverTime;
    since = page.lastRead ?? since;
    if (page.next === undefined || rows.length >= MAX_ROWS_PER_PASS) break;
  }
  return { rows, lastRead: since, serverTime };
}

/** Every row from now back to `since` (ms), oldest first, up to MAX_ROWS_PER_PASS. */
export async function readBack(client: Rows, since: number): Promise<Read> {
  const rows: Activity[] = [];
  let before: string | undefined;
  let serverTime: number | undefined;
  for (;;) {
    const page = await client.activityRows({
      sort: 'desc',
      ...(before === undefined ? {} : { since: before }),
    });
    rows.push(...page.rows.filter((r) => r.time >= since));
    serverTime = page.serverTime ?? serverTime;
    before = page.lastRead ?? before;
    const reached = page.rows.some((r) => r.time < since);
    if (reached || page.next === undefined || rows.length >= MAX_ROWS_PER_PASS) break;
  }
  return { rows: rows.reverse(), lastRead: undefined, serverTime };
}
