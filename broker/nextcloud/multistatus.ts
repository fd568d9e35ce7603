/**
 * Parses WebDAV multistatus replies (PROPFIND) into entries.
 *
 * Security: the reply comes from the network and decides which names the agent sees
 * and which paths later requests use. Hrefs are decoded strictly (a malformed
 * `%`-sequence, an encoded `/` inside a name, a dot segment, or an href outside the
 * requested folder rejects the whole reply), the folder's own entry is dropped only
 * when its decoded href equals the request's, and a DOCTYPE (entity expansion) is
 * refused before parsing. Every reply is read in one strict pass of xml.ts, malformed
 * XML refused; CalDAV and CardDAV replies keep their attributes.
 */
import { iso } from '../base/time.js';
import { NextcloudError } from './errors.js';
import { FILE_ID } from './history-url.js';
import { strictDecodeSegment } from './url.js';
import { readXml, XmlError } from './xml.js';
import type { JsonObject } from '../base/protocol.js';

export interface Entry {
  name: string;
  path: string;
  kind: 'file' | 'folder';
  size: number | null;
  modified: string | null;
  etag: string | null;
  /** `oc:fileid` when the reply carried it (a PROPFIND of PROPFIND_BODY does): what undo names a file by. */
  fileId?: string;
}

/** One `<d:response>`: its raw href and the props of its 2xx propstats, by local name. */
export interface DavResponse {
  href: string;
  props: ReadonlyMap<string, unknown>;
}

/** The properties asked for; nothing else is requested (never `allprop`). */
export const PROPFIND_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>' +
  '<d:resourcetype/><d:getcontentlength/><d:getlastmodified/><d:getetag/>' +
  '<oc:fileid/><oc:permissions/>' +
  '</d:prop></d:propfind>';

function badResponse(what: string): NextcloudError {
  return new NextcloudError(
    'bad_response',
    `Nextcloud sent a reply the broker cannot accept (${what}): not retried; report this to the owner`,
  );
}

/** Names that always hold a list, so one response reads like many. */
const LISTS: ReadonlySet<string> = new Set(['response', 'propstat']);

/** Names that always hold a list in a CalDAV reply too (`<cal:comp name="VEVENT"/>`). */
const GROUPWARE_LISTS: ReadonlySet<string> = new Set([...LISTS, 'comp']);

export function asRecord(v: unknown): JsonObject | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : undefined;
}

function statusCode(statusLine: unknown): number | undefined {
  if (typeof statusLine !== 'string') return undefined;
  const m = /^HTTP\/\d(?:\.\d)? (\d{3})(?: |$)/.exec(statusLine);
  return m ? Number(m[1]) : undefined;
}

/**
 * One strict pass of xml.ts, malformed XML refused. `groupware` (CalDAV and CardDAV):
 * attributes are kept as `@`-prefixed keys and `comp` is a list.
 */
function multistatusOf(xml: string, groupware: boolean): unknown {
  let doc: { root: string; value: unknown };
  try {
    doc = groupware ? readXml(xml, GROUPWARE_LISTS, { attributes: true }) : readXml(xml, LISTS);
  } catch (error) {
    if (!(error instanceof XmlError)) throw error;
    throw badResponse(
      error.message === 'a DOCTYPE' ? 'a DOCTYPE in the XML' : `malformed XML: ${error.message}`,
    );
  }
  if (doc.root !== 'multistatus') throw badResponse('no multistatus');
  return doc.value;
}

/**
 * Parse a multistatus document into responses; throws `bad_response`. `groupware`: keep
 * attributes (see `multistatusOf`).
 */
export function parseMultistatus(xml: string, opts: { groupware?: boolean } = {}): DavResponse[] {
  // Security: no DTDs, so no entity expansion tricks (the reader refuses them too).
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw badResponse('a DOCTYPE in the XML');
  const multistatus = multistatusOf(xml, opts.groupware === true);
  // `<d:multistatus/>` parses to '' (no responses).
  const responses = asRecord(multistatus)?.['response'] ?? [];
  if (!Array.isArray(responses)) throw badResponse('responses are not a list');

  const out: DavResponse[] = [];
  for (const raw of responses) {
    const response = asRecord(raw);
    const href = response?.['href'];
    if (response === undefined || typeof href !== 'string' || href === '')
      throw badResponse('a response without an href');
    const props = new Map<string, unknown>();
    const propstats = response['propstat'];
    for (const ps of Array.isArray(propstats) ? propstats : []) {
      const propstat = asRecord(ps);
      const code = statusCode(propstat?.['status']);
      // Props in a non-2xx propstat (e.g. 404 for a folder's getcontentlength) are absent.
      if (code === undefined || code < 200 || code > 299) continue;
      const prop = asRecord(propstat?.['prop']);
      if (prop === undefined) continue;
      for (const [key, value] of Object.entries(prop)) props.set(key, value);
    }
    out.push({ href, props });
  }
  return out;
}

/**
 * Decode an href into path segments, strictly. `origin` is the instance's origin (an
 * absolute href must be on it). A trailing slash (collections) is dropped.
 */
export function decodeHref(href: string, origin: string): string[] {
  let pathname = href;
  const absolute = /^https?:\/\/[^/?#]+(\/[^?#]*)?$/i.exec(href);
  if (absolute) {
    let hrefOrigin: string;
    try {
      hrefOrigin = new URL(href).origin;
    } catch {
      throw badResponse('an href that does not parse');
    }
    if (hrefOrigin !== origin) throw badResponse('an href on another server');
    pathname = absolute[1] ?? '/';
  }
  if (!pathname.startsWith('/') || /[?#]/.test(pathname))
    throw badResponse('an href that is not an absolute path');
  const segments = pathname.split('/').slice(1);
  if (segments.length > 0 && segments[segments.length - 1] === '') segments.pop();
  return segments.map((segment) => {
    const decoded = strictDecodeSegment(segment);
    if (decoded === undefined) throw badResponse('an href with a malformed %-escape');
    if (decoded === '' || decoded === '.' || decoded === '..')
      throw badResponse('an href with an empty or dot segment');
    if (decoded.includes('/')) throw badResponse('an href with a slash inside a name');
    if (decoded.includes('\u0000')) throw badResponse('an href with a NUL');
    return decoded;
  });
}

export function textProp(props: ReadonlyMap<string, unknown>, key: string): string | null {
  const v = props.get(key);
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Build an entry from a response's props; `name` and `path` come from the caller. */
export function toEntry(name: string, path: string, props: ReadonlyMap<string, unknown>): Entry {
  const resourcetype = asRecord(props.get('resourcetype'));
  const kind = resourcetype !== undefined && 'collection' in resourcetype ? 'folder' : 'file';
  const length = textProp(props, 'getcontentlength');
  const size =
    kind === 'file' && length !== null && /^\d{1,15}$/.test(length) ? Number(length) : null;
  const lastModified = textProp(props, 'getlastmodified');
  const ms = lastModified === null ? NaN : Date.parse(lastModified);
  const etag = textProp(props, 'getetag');
  const fileId = textProp(props, 'fileid');
  return {
    name,
    path,
    kind,
    size,
    modified: Number.isFinite(ms) ? iso(ms) : null,
    // Kept exactly as sent (quoted), so it can go back into If-Match unchanged.
    etag: etag !== null && /^(W\/)?"[\x21\x23-\x7e]*"$/.test(etag) ? etag : null,
    ...(fileId !== null && FILE_ID.test(fileId) ? { fileId } : {}),
  };
}

/** Compare strings by Unicode code point (not UTF-16 code unit). */
export function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx - cy;
  }
}

/** Folders first, then by name in code point order. */
export function compareEntries(a: Entry, b: Entry): number {
  if (a.kind !== b.kind) return a.kind === 'folder' ? -1 : 1;
  return compareCodePoints(a.name, b.name);
}

function sameSegments(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/**
 * Turn a Depth-1 PROPFIND reply for `folderPath` into its children. `requestSegments`
 * are the decoded segments of the request URL's path. Throws `not_folder` when the
 * resource is a file, `bad_response` on any href outside the folder.
 */
export function childrenOf(
  responses: readonly DavResponse[],
  folderPath: string,
  requestSegments: readonly string[],
  origin: string,
): Entry[] {
  return childResponses(responses, folderPath, requestSegments, origin).map((c) => c.entry);
}

/** As `childrenOf`, each child with the response it was read from (for more props). */
export function childResponses(
  responses: readonly DavResponse[],
  folderPath: string,
  requestSegments: readonly string[],
  origin: string,
): { entry: Entry; response: DavResponse }[] {
  let self: DavResponse | undefined;
  const children: { entry: Entry; response: DavResponse }[] = [];
  for (const response of responses) {
    const segments = decodeHref(response.href, origin);
    // Security: the folder itself is recognised by its full decoded href, never by name
    // (a child may carry the folder's name).
    if (sameSegments(segments, requestSegments)) {
      self = response;
      continue;
    }
    if (
      segments.length !== requestSegments.length + 1 ||
      !sameSegments(segments.slice(0, requestSegments.length), requestSegments)
    )
      throw badResponse('an href outside the requested folder');
    const name = (segments[segments.length - 1] as string).normalize('NFC');
    const path = folderPath === '' ? name : `${folderPath}/${name}`;
    children.push({ entry: toEntry(name, path, response.props), response });
  }
  if (self === undefined) throw badResponse('the listing lacks the folder itself');
  if (toEntry('', folderPath, self.props).kind !== 'folder')
    throw new NextcloudError(
      'not_folder',
      `'${folderPath}' is a file, not a folder, so it cannot be listed`,
    );
  return children.sort((a, b) => compareEntries(a.entry, b.entry));
}

/** The single response of a Depth-0 PROPFIND reply, which must be the requested resource. */
export function selfResponse(
  responses: readonly DavResponse[],
  requestSegments: readonly string[],
  origin: string,
): DavResponse {
  const matching = responses.filter((r) =>
    sameSegments(decodeHref(r.href, origin), requestSegments),
  );
  const self = matching[0];
  if (self === undefined || responses.length !== 1)
    throw badResponse('a Depth 0 reply that is not exactly the requested resource');
  return self;
}

/** The single entry of a Depth-0 PROPFIND reply for `path`. */
export function selfEntry(
  responses: readonly DavResponse[],
  path: string,
  requestSegments: readonly string[],
  origin: string,
): Entry {
  const self = selfResponse(responses, requestSegments, origin);
  const name = (path.split('/').pop() ?? '').normalize('NFC');
  return toEntry(name, path, self.props);
}
