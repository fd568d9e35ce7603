/**
 * How much space the account has, read so that no agent write or trash brings it into
 * the zone where Nextcloud's own expiry deletes the trash bin and old versions
 * (docs/nextcloud-behaviour.md#space-driven-expiry; operations/space-guard.ts decides).
 *
 * Two reads, never cached: `GET /ocs/v2.php/cloud/user` (the quota and the bytes the
 * user's files take, computed per request; the WebDAV root's `quota-*-bytes` are cached
 * by Nextcloud for five minutes, so they are not used); with a quota only, one
 * `PROPFIND Depth: 1` of the trash bin summing each item's `oc:size` and, with `path`, a
 * `PROPFIND Depth: 0` of that item's `oc:size` (what a trash would move into the bin).
 */
import { z } from 'zod';
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { getOcsJson } from './capabilities.js';
import { NextcloudError } from './errors.js';
import { parseMultistatus, textProp } from './multistatus.js';
import type { Session } from './session.js';
import { parseBaseUrl } from './url.js';

export interface Space {
  /** The user's quota in bytes; null when unlimited (Nextcloud then uses the disk). */
  quota: number | null;
  /** Bytes the user's files take (trash and versions not included, as in Nextcloud). */
  used: number;
  /** Bytes of the items listed in the trash bin (not read, 0, without a quota). */
  trash: number;
  /** With a `path`: the bytes of that file or folder (`oc:size`). */
  item?: number;
}

/** A trash bin listing larger than this is refused rather than held in memory. */
export const MAX_TRASH_LISTING_BYTES = 32 * 1024 * 1024;

const SIZE_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>' +
  '<oc:size/><d:getcontentlength/>' +
  '</d:prop></d:propfind>';

const BytesSchema = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d{1,18}$/)
    .transform(Number),
]);
const UserSchema = z.object({
  ocs: z.object({
    data: z.object({ quota: z.object({ used: BytesSchema, quota: BytesSchema.optional() }) }),
  }),
});

function bad(what: string): NextcloudError {
  return new NextcloudError(
    'bad_response',
    `Nextcloud sent ${what} the broker cannot read, so it cannot tell whether the write is safe: nothing was done; report this to the owner`,
  );
}

function bytesOf(props: ReadonlyMap<string, unknown>): number {
  const raw = textProp(props, 'size') ?? textProp(props, 'getcontentlength') ?? '0';
  // Security: an unreadable size is refused, never read as 0 (that would hide trash).
  if (!/^\d{1,18}$/.test(raw)) throw bad('a size');
  return Number(raw);
}

export async function readSpace(
  { conn }: Pick<Session, 'conn'>,
  path?: string,
  signal?: AbortSignal,
): Promise<Space> {
  const text = await getOcsJson(conn, 'cloud/user', 'SPACE', signal);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    doc = undefined;
  }
  const user = UserSchema.safeParse(doc);
  if (!user.success || !Number.isSafeInteger(user.data.ocs.data.quota.used))
    throw bad('a user record');
  const { used, quota: limit } = user.data.ocs.data.quota;
  // Negative values are Nextcloud's "unlimited" (-3) and "unknown" (-2).
  const quota = limit !== undefined && limit > 0 ? limit : null;
  // Security: without a quota Nextcloud expires for space only on a full disk, which the
  // broker does not guard (docs/nextcloud-behaviour.md#space-driven-expiry).
  if (quota === null) return { quota, used: Math.max(0, used), trash: 0 };
  const base = parseBaseUrl(conn.instance.url).pathname.replace(/\/+$/, '');
  const trashUrl = new URL(
    `${conn.origin}${base}/remote.php/dav/trashbin/${encodeURIComponent(conn.instance.username)}/trash/`,
  );
  const listing = await conn
    .propfind(trashUrl, '1', '', MAX_TRASH_LISTING_BYTES, signal, SIZE_BODY)
    .catch((error: unknown) => {
      // Security: only a 404 (files_trashbin off: no trash bin to expire, and trash is
      // refused anyway, see files.ts) reads as empty; any other failure refuses the write.
      if (error instanceof NextcloudError && error.code === 'not_found') return undefined;
      throw error;
    });
  const responses = listing === undefined ? [] : parseMultistatus(listing);
  // The trash folder itself answers too (without a size): sum the items only.
  let trash = 0;
  for (const response of responses)
    if (response.href.replace(/\/+$/, '') !== trashUrl.pathname.replace(/\/+$/, ''))
      trash += bytesOf(response.props);
  const space: Space = { quota, used: Math.max(0, used), trash };
  if (path === undefined) return space;
  const stat = await conn.propfind(
    conn.url(path),
    '0',
    path,
    MAX_SMALL_REPLY_BYTES,
    signal,
    SIZE_BODY,
  );
  const self = parseMultistatus(stat)[0];
  if (self === undefined) throw bad('an empty listing');
  return { ...space, item: bytesOf(self.props) };
}
