/**
 * What Nextcloud says about one item beyond its entry: who holds a lock on it, and
 * whether it is the root of a mount (a share the user received, an external storage, a
 * group folder). Checkout reads it to confirm its lock, the release of a checkout to
 * confirm the lock is gone, and trash to refuse what a DELETE would unshare or unmount
 * instead of trashing (docs/nextcloud-behaviour.md, "Locks" and "Trash").
 */
import { MAX_SMALL_REPLY_BYTES, type NextcloudConnection } from './connection.js';
import {
  childResponses,
  decodeHref,
  parseMultistatus,
  selfEntry,
  type DavResponse,
  type Entry,
} from './multistatus.js';
import type { Session } from './session.js';

/** The properties asked for (never `allprop`). */
export const INSPECT_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>' +
  '<d:resourcetype/><d:getcontentlength/><d:getlastmodified/><d:getetag/>' +
  '<oc:owner-id/><oc:permissions/><nc:mount-type/><nc:is-mount-root/><nc:lock-owner-type/><nc:lock-token/>' +
  '</d:prop></d:propfind>';

/** A folder's listing for the mount check is refused rather than held in memory beyond this. */
const MAX_INSPECT_LISTING_BYTES = 32 * 1024 * 1024;

/**
 * The lock on an item: a token lock (an RFC 4918 LOCK, as checkout takes) with its full
 * `opaquelocktoken:` token, or a lock of another kind (a user lock from the web UI or a
 * desktop client, an app lock from an editor).
 */
export type LockFacts =
  { readonly kind: 'token'; readonly token: string } | { readonly kind: 'user' | 'app' };

export interface MountFacts {
  /** The item is the root of a mount; undefined when Nextcloud did not say. */
  readonly root: boolean | undefined;
  /** `shared`, `external`, `external-session`, `group`, …; '' for the user's own storage. */
  readonly type: string;
  /** The user id of the item's owner (the sharer, inside a received share). */
  readonly owner: string | null;
}

export interface Inspection {
  readonly entry: Entry;
  readonly lock: LockFacts | null;
  readonly mount: MountFacts;
  /** `oc:permissions` as Nextcloud spells them (`SRGDNVCK`, …); null when not answered. */
  readonly permissions: string | null;
}

function text(props: ReadonlyMap<string, unknown>, key: string): string | undefined {
  const v = props.get(key);
  return typeof v === 'string' ? v : undefined;
}

function lockOf(props: ReadonlyMap<string, unknown>): LockFacts | null {
  const type = text(props, 'lock-owner-type');
  const token = text(props, 'lock-token');
  if (type === undefined || type === '') return null;
  // nc:lock-token of a token lock is its uuid without the `opaquelocktoken:` prefix.
  if (type === '2' && token !== undefined && /^[\x21-\x7e]{1,256}$/.test(token))
    return { kind: 'token', token: `opaquelocktoken:${token}` };
  return { kind: type === '1' ? 'app' : 'user' };
}

function mountOf(props: ReadonlyMap<string, unknown>): MountFacts {
  const root = text(props, 'is-mount-root');
  return {
    root: root === 'true' ? true : root === 'false' ? false : undefined,
    type: text(props, 'mount-type') ?? '',
    owner: text(props, 'owner-id') || null,
  };
}

function inspection(entry: Entry, response: DavResponse): Inspection {
  return {
    entry,
    lock: lockOf(response.props),
    mount: mountOf(response.props),
    permissions: text(response.props, 'permissions') ?? null,
  };
}

/** One file or folder (PROPFIND Depth 0). */
export async function stat(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  signal?: AbortSignal,
): Promise<Entry> {
  const url = conn.url(path);
  const text = await conn.propfind(url, '0', path, MAX_SMALL_REPLY_BYTES, signal);
  return selfEntry(
    parseMultistatus(text),
    path,
    decodeHref(url.pathname, conn.origin),
    conn.origin,
  );
}

/** One item, with its lock and mount facts (PROPFIND Depth 0). */
export async function inspect(
  { conn }: Pick<Session, 'conn'>,
  path: string,
  signal?: AbortSignal,
): Promise<Inspection> {
  const url = conn.url(path);
  const body = await conn.propfind(url, '0', path, MAX_SMALL_REPLY_BYTES, signal, INSPECT_BODY);
  const responses = parseMultistatus(body);
  const segments = decodeHref(url.pathname, conn.origin);
  const entry = selfEntry(responses, path, segments, conn.origin);
  // selfEntry checked that the reply is exactly the requested item.
  return inspection(entry, responses[0] as DavResponse);
}

/** The children of a folder, each with its lock and mount facts (PROPFIND Depth 1). */
export function inspectChildren(
  conn: NextcloudConnection,
  path: string,
  signal?: AbortSignal,
): Promise<Inspection[]> {
  return children(conn, conn.url(path), path, signal);
}

/** What the account reaches at its root, each with its owner and mount (`broker doctor`). */
export function inspectRoot(
  conn: NextcloudConnection,
  signal?: AbortSignal,
): Promise<Inspection[]> {
  return children(conn, conn.davUrl(''), '', signal);
}

async function children(
  conn: NextcloudConnection,
  url: URL,
  path: string,
  signal: AbortSignal | undefined,
): Promise<Inspection[]> {
  const body = await conn.propfind(url, '1', path, MAX_INSPECT_LISTING_BYTES, signal, INSPECT_BODY);
  const segments = decodeHref(url.pathname, conn.origin);
  return childResponses(parseMultistatus(body), path, segments, conn.origin).map((c) =>
    inspection(c.entry, c.response),
  );
}

/** Whether this item is locked by exactly this token lock. */
export function heldBy(facts: Inspection, token: string): boolean {
  return facts.lock?.kind === 'token' && facts.lock.token === token;
}
