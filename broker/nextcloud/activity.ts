/**
 * One page of the Activity app's stream of the broker's account, for reconciliation
 * (docs/nextcloud-behaviour.md "The Activity app"): `GET
 * /ocs/v2.php/apps/activity/api/v2/activity[/self]?format=json` with `since` (an activity
 * id), `limit` (at most 200 rows, counted before Nextcloud merges them into entries) and
 * `sort`. The next page starts at the `since` of the answer's `Link: <…>; rel="next"`;
 * without one this was the last. A page whose rows all came to nothing (none, or none a
 * provider could word) is Nextcloud's 304, which still carries the `Link` when more
 * follow. `X-Activity-Last-Given` names the last row read, and the `Date` header the
 * server's clock.
 */
import { z } from 'zod';
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { NextcloudError } from './errors.js';
import { header } from './connection.js';
import { activityUrl } from './history-url.js';
import type { HttpResponse } from './http.js';
import type { Session } from './session.js';

/** One rich parameter of a subject (a file, a user, an event, a calendar). */
export interface RichParameter {
  readonly type: string;
  readonly id: string;
  readonly name: string;
  /** Files: the path in the account's view, without a leading slash. */
  readonly path?: string;
}

export interface Activity {
  /** Kept as a string (ids may pass 2^53). A merged entry has its newest change's id. */
  readonly id: string;
  readonly app: string;
  /** `file_created`, `file_changed`, `file_deleted`, `file_restored`, `calendar_event`, … */
  readonly type: string;
  /** The account that made the change ('' for the system). */
  readonly user: string;
  /** The subject as Nextcloud words it, for the owner's eyes only. */
  readonly subject: string;
  /** The rich subject's template and parameters (a move's old path is `oldfile`). */
  readonly template: string;
  readonly parameters: Readonly<Record<string, RichParameter>>;
  readonly objectType: string;
  readonly objectId: string;
  readonly objectName: string;
  /** Every object merged into the entry: id → path in the account's view. */
  readonly objects: readonly (readonly [id: string, path: string])[];
  /** When (ms; Nextcloud gives whole seconds). */
  readonly time: number;
}

export interface ActivityPage {
  readonly activities: readonly Activity[];
  /** The `since` of the next page; undefined on the last. */
  readonly next: string | undefined;
  /** `X-Activity-Last-Given`: the id of the last row the page read (absent: none). */
  readonly lastGiven?: string;
  /** The server's clock when it answered (`Date`, ms), when the answer says. */
  readonly serverTime?: number;
}

export interface ActivityQuery {
  /** An activity id of this account's stream: the page starts after it. */
  readonly since?: string;
  /** Rows per page, 1–200 (default 200). */
  readonly limit?: number;
  /** `asc` (oldest first) or `desc` (the default of Nextcloud: newest first). */
  readonly sort?: 'asc' | 'desc';
  /** `self`: only the account's own changes (who made it: the account); default all. */
  readonly filter?: 'all' | 'self';
}

const MAX_LIMIT = 200;
const ACTIVITY_ID = /^\d{1,24}$/;

const IdSchema = z.union([z.string().regex(ACTIVITY_ID), z.number().int().nonnegative()]);
const ParameterSchema = z.object({
  type: z.string(),
  id: z.union([z.string(), z.number()]).transform(String),
  name: z.string(),
  path: z.string().optional(),
});
const EntrySchema = z.object({
  activity_id: IdSchema,
  app: z.string(),
  type: z.string(),
  user: z.string(),
  subject: z.string(),
  subject_rich: z.tuple([
    z.string(),
    z.union([z.record(z.string(), ParameterSchema), z.array(z.never()).length(0)]),
  ]),
  object_type: z.string(),
  object_id: IdSchema,
  object_name: z.string(),
  // PHP writes an empty array as `[]`.
  objects: z.union([z.record(z.string(), z.string()), z.array(z.never()).length(0)]),
  datetime: z.string().refine((d) => Number.isFinite(Date.parse(d))),
});
const PageSchema = z.object({ ocs: z.object({ data: z.array(EntrySchema) }) });

function bad(instance: string): NextcloudError {
  return new NextcloudError(
    'bad_response',
    `Nextcloud sent an activity page the broker cannot read on instance '${instance}': report this to the owner`,
  );
}

/**
 * The ids as JSON text reads them: an id past 2^53 would lose digits as a number, so
 * `activity_id` and `object_id` are quoted before the text is parsed.
 */
function quoteIds(text: string): string {
  return text.replace(/"(activity_id|object_id)":(\d+)/g, '"$1":"$2"');
}

function toActivity(e: z.infer<typeof EntrySchema>): Activity {
  return {
    id: String(e.activity_id),
    app: e.app,
    type: e.type,
    user: e.user,
    subject: e.subject,
    template: e.subject_rich[0],
    parameters: Array.isArray(e.subject_rich[1]) ? {} : e.subject_rich[1],
    objectType: e.object_type,
    objectId: String(e.object_id),
    objectName: e.object_name,
    objects: Array.isArray(e.objects) ? [] : Object.entries(e.objects),
    time: Date.parse(e.datetime),
  };
}

/** The `since` of `Link: <…?since=N…>; rel="next"`, if the answer has one. */
function nextSince(link: string | undefined, instance: string): string | undefined {
  if (link === undefined) return undefined;
  const target = /<([^>]*)>\s*;\s*rel="next"/.exec(link)?.[1];
  if (target === undefined) return undefined;
  let since: string | null;
  try {
    since = new URL(target, 'http://link.invalid').searchParams.get('since');
  } catch {
    since = null;
  }
  if (since === null || !ACTIVITY_ID.test(since)) throw bad(instance);
  return since;
}

export async function readActivity(
  { conn }: Pick<Session, 'conn'>,
  query: ActivityQuery = {},
  signal?: AbortSignal,
): Promise<ActivityPage> {
  const limit = query.limit ?? MAX_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new NextcloudError('invalid_argument', `an activity page holds 1 to ${MAX_LIMIT} rows`);
  if (query.since !== undefined && !ACTIVITY_ID.test(query.since))
    throw new NextcloudError('invalid_argument', 'an activity id is digits only');
  const url = activityUrl(conn.instance.url, query.filter ?? 'all');
  url.searchParams.set('format', 'json');
  if (query.since !== undefined) url.searchParams.set('since', query.since);
  url.searchParams.set('limit', String(limit));
  url.searchParams.set('sort', query.sort ?? 'desc');
  const { res, text } = await conn.exchange(
    { method: 'GET', url, headers: { 'ocs-apirequest': 'true', accept: 'application/json' } },
    {
      idempotent: true,
      ok: [200, 304, 403, 404],
      ctx: { verb: 'ACTIVITY', instance: conn.name, path: '' },
      signal,
    },
    MAX_SMALL_REPLY_BYTES * 8,
  );
  const facts = pageFacts(res, conn.name);
  if (res.status === 304) return { activities: [], ...facts };
  if (res.status === 403)
    throw new NextcloudError(
      'bad_cursor',
      `activity ${query.since ?? ''} is not in the stream of instance '${conn.name}''s account: start again without it`,
      { status: 403 },
    );
  if (res.status === 404)
    throw new NextcloudError(
      'not_found',
      `the Activity app is not enabled on instance '${conn.name}': Nextcloud keeps no record to reconcile with; ask the owner to enable it`,
      { status: 404 },
    );
  let doc: unknown;
  try {
    doc = JSON.parse(quoteIds(text));
  } catch {
    throw bad(conn.name);
  }
  const page = PageSchema.safeParse(doc);
  if (!page.success) throw bad(conn.name);
  return { activities: page.data.ocs.data.map(toActivity), ...facts };
}

/** What every answer says beside its rows: the next page, the last row read, the time. */
function pageFacts(res: HttpResponse, instance: string): Omit<ActivityPage, 'activities'> {
  const lastGiven = header(res, 'x-activity-last-given');
  const date = Date.parse(header(res, 'date') ?? '');
  return {
    next: nextSince(header(res, 'link'), instance),
    ...(lastGiven !== undefined && ACTIVITY_ID.test(lastGiven) ? { lastGiven } : {}),
    ...(Number.isFinite(date) ? { serverTime: date } : {}),
  };
}
