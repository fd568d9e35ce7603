/**
 * `GET /ocs/v2.php/apps/activity/api/v2/activity[/all|self|by]` as the Activity app of
 * Nextcloud 34.0.1 and 29.0.5 answers it (docs/nextcloud-behaviour.md "The Activity
 * app"): the signed-in user's stream, `since` (an activity id), `limit` (default 50, at
 * most 200, counting rows before they merge), `sort` (`desc` default, or `asc`); rows
 * ordered by time, then id. Headers `X-Activity-First-Known` (no usable `since`),
 * `X-Activity-Last-Given`, `Link` (while more rows follow) and `ETag`; an empty page is
 * 304 without a body; another user's `since` is 403; without `OCS-APIRequest`, 412.
 */
import { createHash } from 'node:crypto';
import { ocsReply, type OcsContext } from '../ocs-reply.js';
import type { ActivityRow, RichParam } from './log.js';
import { mergeRows, objectsOf, plainSubject, type MergedEvent } from './merge.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const FILTERS = new Set(['all', 'self', 'by']);

/** PHP's `(int)` of a query value: leading digits, else 0. */
function intOf(value: string | null, fallback: number): number {
  if (value === null) return fallback;
  const n = /^\s*(-?\d+)/.exec(value)?.[1];
  return n === undefined ? 0 : Number(n);
}

function atom(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

function baseOf(ctx: OcsContext): string {
  return `http://${ctx.req.headers.host ?? '127.0.0.1'}`;
}

function withLinks(params: Readonly<Record<string, RichParam>>, base: string): unknown {
  const out: Record<string, unknown> = {};
  for (const [key, p] of Object.entries(params))
    out[key] = p.type === 'file' ? { ...p, link: `${base}/f/${p.id}` } : { ...p };
  return out;
}

function entryOf(event: MergedEvent, base: string): unknown {
  const { row } = event;
  return {
    activity_id: row.id,
    app: row.app,
    type: row.type,
    user: row.author,
    subject: plainSubject(event),
    subject_rich: [event.template, withLinks(event.params, base)],
    message: '',
    message_rich: ['', []],
    object_type: row.objectType,
    object_id: row.objectId,
    object_name: row.objectName,
    objects: Object.fromEntries(objectsOf(event)),
    link:
      row.linkDir === undefined
        ? ''
        : `${base}/apps/files/?dir=${encodeURIComponent(row.linkDir).replace(/%2F/g, '/')}`,
    icon: `${base}/apps/${row.app === 'files' ? 'files' : 'dav'}/img/${row.type}.svg`,
    datetime: atom(event.timestamp),
  };
}

const byTime = (a: ActivityRow, b: ActivityRow): number => a.timestamp - b.timestamp || a.id - b.id;

export function activityApi(ctx: OcsContext, user: string, filter: string): void {
  // Security (of the real server, mirrored): OCS answers need the CSRF header.
  if (ctx.req.headers['ocs-apirequest'] !== 'true') {
    ctx.reply.json(412, { message: 'CSRF check failed' + ctx.reply.leak() });
    return;
  }
  if (!FILTERS.has(filter)) return ocsReply(ctx, 404, '', []);
  const log = ctx.state.activity;
  const asc = ctx.query.get('sort') === 'asc';
  const limit = Math.min(MAX_LIMIT, intOf(ctx.query.get('limit'), DEFAULT_LIMIT));
  const since = intOf(ctx.query.get('since'), 0);
  let rows = log
    .streamOf(user)
    .filter((r) => filter === 'all' || (filter === 'self') === (r.author === user))
    .sort((a, b) => (asc ? byTime(a, b) : byTime(b, a)));
  const headers: Record<string, string> = {};
  const anchor = since === 0 ? undefined : log.row(since);
  if (anchor === undefined) {
    const first = log.streamOf(user).sort((a, b) => (asc ? byTime(a, b) : byTime(b, a)))[0];
    if (first !== undefined) headers['X-Activity-First-Known'] = String(first.id);
  } else {
    if (anchor.affected !== user) return ocsReply(ctx, 403, '', []);
    rows = rows.filter((r) =>
      asc
        ? r.timestamp >= anchor.timestamp && r.id > anchor.id
        : r.timestamp <= anchor.timestamp && r.id < anchor.id,
    );
  }
  const page = rows.slice(0, Math.max(0, limit));
  const hasMore = rows.length > page.length;
  const last = page[page.length - 1];
  if (last !== undefined) headers['X-Activity-Last-Given'] = String(last.id);
  const base = baseOf(ctx);
  if (hasMore && last !== undefined) {
    const next = new URLSearchParams({ since: String(last.id), limit: String(limit) });
    next.set('sort', asc ? 'asc' : 'desc');
    if (ctx.query.get('format') !== null) next.set('format', ctx.query.get('format') ?? '');
    const path = new URL(ctx.req.url ?? '/', base).pathname;
    headers.Link = `<${base}${path}?${next.toString()}>; rel="next"`;
  }
  const entries = mergeRows(page);
  headers.ETag = createHash('md5')
    .update(JSON.stringify(entries.map((e) => e.row.id)))
    .digest('hex');
  if (entries.length === 0 || ctx.req.headers['if-none-match'] === headers.ETag) {
    ctx.reply.res.writeHead(304, headers);
    ctx.reply.res.end();
    return;
  }
  for (const [name, value] of Object.entries(headers)) ctx.reply.res.setHeader(name, value);
  ocsReply(
    ctx,
    200,
    'OK',
    entries.map((e) => entryOf(e, base)),
  );
}
