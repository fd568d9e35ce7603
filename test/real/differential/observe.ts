/**
 * What the broker reads of a Nextcloud answer, reduced to a value two servers can be
 * compared on: the status, the headers the broker (or its doctor) looks at, and the
 * body as the broker understands it (a Sabre error's exception, a multistatus through
 * the broker's own parser, a lock token, the capabilities, the bytes of a file).
 *
 * Values that are different on every server by nature (etags, file ids, lock tokens)
 * become labels in order of first appearance within one run (`etag#1`, `etag#2`, …),
 * so a comparison still sees when a value is new, reused or changed: an answer that
 * keeps or changes an etag where the other server does not is a difference.
 */
import { createHash } from 'node:crypto';
import { toEvent, veventsOf } from '../../../broker/nextcloud/calendar-event.js';
import { eventsOfReport } from '../../../broker/nextcloud/calendar-events.js';
import { collectionsOf } from '../../../broker/nextcloud/collections.js';
import { contactsOf } from '../../../broker/nextcloud/contacts.js';
import { parseComponents } from '../../../broker/nextcloud/content-lines.js';
import { decodeHref, parseMultistatus } from '../../../broker/nextcloud/multistatus.js';
import { headerOf, type RawResponse } from '../http.js';

export class Labels {
  readonly #seen = new Map<string, string>();
  readonly #counts = new Map<string, number>();

  of(kind: string, value: string): string {
    const key = `${kind}\u0000${value}`;
    const known = this.#seen.get(key);
    if (known !== undefined) return known;
    const n = (this.#counts.get(kind) ?? 0) + 1;
    this.#counts.set(kind, n);
    const label = `${kind}#${n}`;
    this.#seen.set(key, label);
    return label;
  }
}

export type Observation = Record<string, unknown>;

/** What one step asked to see, beyond the defaults. */
export interface Reading {
  /** Response headers compared verbatim (lower case). */
  headers?: readonly string[];
  /** Compare the body's bytes (GET of a file). */
  content?: boolean;
  /** A multistatus whose order is part of the answer (SEARCH): no response is taken as the target. */
  ordered?: boolean;
  /**
   * Read a CalDAV/CardDAV body with the broker's own readers: the collections of a home,
   * the events of a calendar-query (or of one GET `.ics`), the cards of a query.
   */
  dav?: 'calendars' | 'addressbooks' | 'events' | 'event' | 'cards';
}

const ORIGIN = 'http://server';

/** A groupware body as the broker reads it (its error, if it cannot). */
function groupware(res: RawResponse, target: string, as: NonNullable<Reading['dav']>): unknown {
  if (res.status !== 207 && res.status !== 200) return undefined;
  const at = decodeHref(target.split('?')[0] ?? '', ORIGIN);
  try {
    switch (as) {
      case 'calendars':
        return collectionsOf(res.text, 'calendar', at, ORIGIN);
      case 'addressbooks':
        return collectionsOf(res.text, 'contacts', at, ORIGIN);
      case 'events':
        return eventsOfReport(res.text, at, ORIGIN, true);
      case 'event':
        return veventsOf(parseComponents(res.text)).map((e) => toEvent(e, true));
      case 'cards':
        return contactsOf(res.text, at, ORIGIN, true);
    }
  } catch (error) {
    return { unreadable: (error as Error).message };
  }
}

function etagLabel(labels: Labels, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  // The broker passes an etag back unchanged only when it is quoted.
  return /^(W\/)?"[\x21\x23-\x7e]*"$/.test(value)
    ? labels.of('etag', value.replace(/^W\//, ''))
    : `unquoted:${value}`;
}

function lockLabel(labels: Labels, token: string | undefined): string | undefined {
  if (token === undefined) return undefined;
  // nc:lock-token shows a token lock's uuid without its prefix: the same lock, the same label.
  if (/^[0-9a-f-]{36}$/.test(token)) return labels.of('lock', `opaquelocktoken:${token}`);
  return /^opaquelocktoken:[0-9a-f-]{36}$/.test(token)
    ? labels.of('lock', token)
    : /^files_lock\/[0-9a-f-]{36}$/.test(token)
      ? labels.of('userlock', token)
      : `other:${token}`;
}

function mime(res: RawResponse): string | undefined {
  return headerOf(res, 'content-type')?.split(';')[0]?.trim().toLowerCase();
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function isFolder(props: ReadonlyMap<string, unknown>): boolean {
  const type = props.get('resourcetype');
  return typeof type === 'object' && type !== null && 'collection' in type;
}

function folderEtag(value: string | undefined): string {
  return value !== undefined && /^"[\x21\x23-\x7e]+"$/.test(value) ? 'quoted' : `odd:${value}`;
}

/** An href with what differs by nature on every server replaced. */
function hrefOf(href: string, labels: Labels): string {
  return (
    href
      // Trash bin items are named `<name>.d<deletion time>`.
      .replace(/(\/trashbin\/[^/]+\/trash\/.*)\.d\d+(\/?)$/, '$1.d<time>$2')
      // A file's versions are listed under its id.
      .replace(
        /(\/versions\/[^/]+\/versions\/)(\d+)/,
        (_, at: string, id: string) => `${at}${labels.of('fileid', id)}`,
      )
      // Calendar trash bin items are named by a number of the server's.
      .replace(/(\/trashbin\/objects\/)\d+\.ics$/, '$1<n>.ics')
  );
}

function multistatus(body: string, labels: Labels, ordered: boolean): unknown {
  let parsed;
  try {
    parsed = parseMultistatus(body);
  } catch (error) {
    return { unreadable: (error as Error).message };
  }
  // Hrefs that name what differs by nature: a trash bin item's time, a file id, a
  // calendar trash bin item's number.
  const named = parsed.map((r) => ({ ...r, href: hrefOf(r.href, labels) }));
  // The requested resource comes first; the order of the rest is not kept (the broker
  // sorts), unless the order is the answer (a search).
  const [self, ...children] = named;
  const key = (r: { href: string; props: ReadonlyMap<string, unknown> }): string =>
    `${r.href}\u0000${String(r.props.get('calendar-data') ?? '')}`;
  const kept = ordered
    ? named
    : self === undefined
      ? []
      : [self, ...children.sort((a, b) => (key(a) < key(b) ? -1 : 1))];
  return kept.map((r) => {
    const props: Record<string, unknown> = {};
    for (const [key, value] of [...r.props].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (key === 'getetag')
        // A folder's etag is only passed on to the agent; a file's goes back in If-Match.
        props[key] = isFolder(r.props) ? folderEtag(text(value)) : etagLabel(labels, text(value));
      else if (key === 'fileid') props[key] = labels.of('fileid', String(value));
      else if (key === 'getlastmodified' || key === 'deleted-at')
        props[key] = Number.isFinite(Date.parse(String(value))) ? 'date' : value;
      else if (key === 'resourcetype') props[key] = isFolder(r.props) ? 'collection' : 'file';
      else if (key === 'lock-token') props[key] = lockLabel(labels, text(value));
      else if (key === 'lock-time' || key === 'trashbin-deletion-time')
        props[key] = /^\d+$/.test(String(value)) ? 'unix-time' : value;
      else props[key] = value;
    }
    return { href: r.href, props };
  });
}

/** An element's text, `''` for an empty element (`<x/>` or `<x></x>`), undefined if absent. */
function elementText(body: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}(?:\\s[^>]*)?(?:/>|>([^<]*)</${tag}>)`).exec(body);
  return m === null ? undefined : (m[1] ?? '');
}

/** A LOCK answer: the broker takes the token (header first, then the body). */
function lockAnswer(body: string, labels: Labels): unknown {
  const token =
    /<d:locktoken>\s*<d:href>([^<]*)<\/d:href>/.exec(body)?.[1] ??
    elementText(body, 'nc:lock-token');
  const userLock = elementText(body, 'nc:lock');
  return {
    token: lockLabel(labels, token === '' ? undefined : token),
    ...(userLock === undefined ? {} : { 'nc:lock': userLock }),
  };
}

interface OcsDoc {
  ocs?: {
    meta?: { statuscode?: unknown };
    data?: { capabilities?: { files?: Record<string, unknown> }; id?: unknown } | unknown[];
  };
  installed?: unknown;
  maintenance?: unknown;
  versionstring?: unknown;
}

/** A rich parameter of an activity: file ids as labels, links dropped (they name the host). */
function richParameter(labels: Labels, value: unknown): unknown {
  const p = value as { type?: unknown; id?: unknown; name?: unknown; path?: unknown };
  return {
    type: p.type,
    id:
      p.type === 'file'
        ? labels.of('fileid', String(p.id))
        : p.type === 'calendar' || p.type === 'addressbook'
          ? `${labels.of('collection', String(p.id))}:${typeof p.id}`
          : p.id,
    name: p.name,
    ...(p.path === undefined ? {} : { path: p.path }),
  };
}

/**
 * Activity entries as reconciliation reads them: what changed, by whom, on which
 * objects (ids as labels), and the rich subject (a move's old path). The time is only
 * checked to be one.
 */
function activities(data: unknown[], labels: Labels): unknown {
  return data.map((raw) => {
    const e = raw as Record<string, unknown>;
    const idLabel = (id: unknown): string =>
      e.object_type === 'files'
        ? labels.of('fileid', String(id))
        : labels.of('collection', String(id));
    const [template, params] = (e.subject_rich as [string, Record<string, unknown>]) ?? [];
    return {
      activity_id: labels.of('activity', String(e.activity_id)),
      app: e.app,
      type: e.type,
      user: e.user,
      subject: e.subject,
      template,
      params: Object.fromEntries(
        Object.entries(params ?? {})
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, v]) => [k, richParameter(labels, v)]),
      ),
      object_type: e.object_type,
      object_id: idLabel(e.object_id),
      object_name: e.object_name,
      objects: Object.entries((e.objects as Record<string, string>) ?? {}).map(([id, path]) => [
        idLabel(id),
        path,
      ]),
      datetime: Number.isFinite(Date.parse(String(e.datetime))) ? 'date' : e.datetime,
    };
  });
}

function json(body: string, labels: Labels): unknown {
  let doc: OcsDoc;
  try {
    doc = JSON.parse(body) as OcsDoc;
  } catch {
    return { unreadable: 'not JSON' };
  }
  const data = doc.ocs?.data;
  if (Array.isArray(data) && data.some((e) => typeof e === 'object' && e !== null))
    return { statuscode: doc.ocs?.meta?.statuscode, activities: activities(data, labels) };
  if (doc.installed !== undefined) {
    // status.php, as the doctor reads it.
    return {
      installed: doc.installed,
      maintenance: doc.maintenance,
      // The series is compared (the fake answers as the real server's), not the release.
      versionstring: String(doc.versionstring).replace(/^(\d+)\.\d+\.\d+$/, '$1.x.y'),
    };
  }
  const ocsData = Array.isArray(data) ? undefined : data;
  const files = ocsData?.capabilities?.files;
  return {
    statuscode: doc.ocs?.meta?.statuscode,
    ...(ocsData?.capabilities === undefined
      ? {}
      : {
          files:
            files === undefined ? 'absent' : { undelete: files.undelete, locking: files.locking },
        }),
    // cloud/user: the user id; a lock answer's numeric id differs by nature.
    ...(ocsData?.id === undefined
      ? {}
      : { id: typeof ocsData.id === 'string' ? ocsData.id : typeof ocsData.id }),
  };
}

function body(res: RawResponse, labels: Labels, reading: Reading): unknown {
  const type = mime(res);
  if (res.body.length === 0) return 'empty';
  // Error pages and the WebDAV banner: their wording is never read.
  if (type === 'text/html') return 'html';
  if (type === 'application/xml' || type === 'text/xml') {
    if (/<d:error\b/.test(res.text))
      return { error: /<s:exception>([^<]*)<\/s:exception>/.exec(res.text)?.[1] ?? 'none' };
    if (/<d:multistatus\b/.test(res.text))
      return { multistatus: multistatus(res.text, labels, reading.ordered === true) };
    if (/<d:prop\b/.test(res.text)) return { lock: lockAnswer(res.text, labels) };
    return { xml: 'other' };
  }
  if (type === 'application/json') return json(res.text, labels);
  if (reading.content)
    return {
      bytes: res.body.length,
      sha256: createHash('sha256').update(res.body).digest('hex').slice(0, 16),
    };
  return `${type ?? 'untyped'} body`;
}

export function observe(
  res: RawResponse,
  labels: Labels,
  target: string,
  reading: Reading = {},
): Observation {
  const out: Observation = { status: res.status };
  // File etags in headers (OCS answers carry an unrelated ETag of their own).
  if (target.startsWith('/remote.php/dav/')) {
    const etag = etagLabel(labels, headerOf(res, 'etag'));
    if (etag !== undefined) out.etag = etag;
    const ocEtag = etagLabel(labels, headerOf(res, 'oc-etag'));
    if (ocEtag !== undefined) out['oc-etag'] = ocEtag;
  }
  // Nextcloud's id of the request: which answers show one is compared, not its value.
  out['x-request-id'] = /^[A-Za-z0-9]{20}$/.test(headerOf(res, 'x-request-id') ?? '')
    ? 'present'
    : (headerOf(res, 'x-request-id') ?? 'absent');
  for (const name of ['x-activity-first-known', 'x-activity-last-given']) {
    const v = headerOf(res, name);
    if (v !== undefined) out[name] = labels.of('activity', v);
  }
  const link = headerOf(res, 'link');
  if (link !== undefined)
    out.link = link
      .replace(/^<https?:\/\/[^/]*/, '<')
      .replace(/since=(\d+)/, (_, id: string) => `since=${labels.of('activity', id)}`);
  const fileId = headerOf(res, 'oc-fileid');
  if (fileId !== undefined) out['oc-fileid'] = /^\d+oc[a-z0-9]+$/.test(fileId) ? 'present' : fileId;
  const lockToken = headerOf(res, 'lock-token');
  if (lockToken !== undefined)
    out['lock-token'] = lockLabel(labels, /^<(.*)>$/.exec(lockToken)?.[1] ?? lockToken);
  for (const name of ['www-authenticate', 'content-range', ...(reading.headers ?? [])]) {
    const v = headerOf(res, name);
    if (v !== undefined) out[name] = v;
  }
  // The broker takes a download's size from Content-Length.
  if (reading.content && res.status >= 200 && res.status < 300 && mime(res) !== 'text/html')
    out['content-length'] = headerOf(res, 'content-length');
  const read = reading.dav === undefined ? undefined : groupware(res, target, reading.dav);
  out.body = read === undefined ? body(res, labels, reading) : { read };
  return out;
}

/** The lock token of a LOCK answer (header first, then body), for later steps to send. */
export function lockTokenOf(res: RawResponse): string | undefined {
  return (
    /^<(.*)>$/.exec(headerOf(res, 'lock-token') ?? '')?.[1] ??
    /<d:locktoken>\s*<d:href>([^<]*)<\/d:href>/.exec(res.text)?.[1] ??
    /<nc:lock-token>([^<]*)<\/nc:lock-token>/.exec(res.text)?.[1]
  );
}
