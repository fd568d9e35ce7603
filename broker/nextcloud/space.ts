/**
 * Whose space a write lands in, and how much of it there is, read so that no agent write
 * or trash brings an account into the zone where Nextcloud's own expiry deletes the trash
 * bin and old versions (docs/nextcloud-behaviour.md#space-driven-expiry;
 * operations/space-guard.ts decides).
 *
 * Read anew on every call (the guard may reuse a reading for a few seconds:
 * operations/space-readings.ts): `GET /ocs/v2.php/cloud/user` (this account's id, its
 * quota and the bytes its files take, computed per request); with `at`, one `PROPFIND
 * Depth: 0` of that path for its `oc:owner-id` (a folder someone else shared belongs to
 * them: the write lands in their space), their free space as this account can see it
 * (`quota-available-bytes`, which Nextcloud caches for five minutes) and, for an item,
 * its `oc:size`; for this account's own space with a quota, one `PROPFIND Depth: 1` of
 * the trash bin summing each item's `oc:size`.
 */
import { z } from 'zod';
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { getOcsJson } from './capabilities.js';
import { NextcloudError } from './errors.js';
import { parseMultistatus, textProp } from './multistatus.js';
import type { Session } from './session.js';
import { trashUrl } from './history-url.js';

/** This account's own space. */
export interface OwnSpace {
  readonly whose: 'own';
  /** The user's quota in bytes; null when unlimited (Nextcloud then uses the disk). */
  readonly quota: number | null;
  /** Bytes the user's files take (trash and versions not included, as in Nextcloud). */
  readonly used: number;
  /** Bytes of the items listed in the trash bin (not read, 0, without a quota). */
  readonly trash: number;
  /** With `at.item`: the bytes of that file or folder (`oc:size`). */
  readonly item?: number;
}

/**
 * The space of a folder another user shared with this account (or of a mount owned by
 * no user): all this account can see of it. The sharer's trash bin and versions are not
 * visible at all.
 */
export interface SharerSpace {
  readonly whose: 'sharer';
  /** The sharer's user id (`oc:owner-id`); '' when Nextcloud names none (a mount). */
  readonly owner: string;
  /**
   * The sharer's free space as Nextcloud shows it to this account (`quota-available-bytes`,
   * up to five minutes old): `unlimited` when they have no quota (-3), `unknown` (-2, or
   * not answered).
   */
  readonly free: number | 'unlimited' | 'unknown';
  /** With `at.item`: the bytes of that file or folder (`oc:size`). */
  readonly item?: number;
}

export type Space = OwnSpace | SharerSpace;

/** A trash bin listing larger than this is refused rather than held in memory. */
export const MAX_TRASH_LISTING_BYTES = 32 * 1024 * 1024;

/** Where a write lands: `path` decides whose space (the item itself, or a new file's folder). */
export interface SpaceTarget {
  readonly path: string;
  /** Also read the bytes of the item at `path` (what a trash would move). */
  readonly item: boolean;
}

const SIZE_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>' +
  '<oc:size/><d:getcontentlength/>' +
  '</d:prop></d:propfind>';

/** What the guard reads of the path a write lands at (its owner, their free space, its size). */
export const SPACE_TARGET_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>' +
  '<oc:owner-id/><d:quota-available-bytes/><oc:size/><d:getcontentlength/>' +
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
    data: z.object({
      id: z.string().min(1),
      quota: z.object({ used: BytesSchema, quota: BytesSchema.optional() }),
    }),
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

/** `quota-available-bytes` as Nextcloud answers it: -3 unlimited, -2 unknown. */
function freeOf(props: ReadonlyMap<string, unknown>): SharerSpace['free'] {
  const raw = textProp(props, 'quota-available-bytes');
  if (raw === '-3') return 'unlimited';
  // Security: anything else that is not a byte count is "unknown", never unlimited.
  return raw !== null && /^\d{1,18}$/.test(raw) ? Number(raw) : 'unknown';
}

async function readUser(
  conn: Session['conn'],
  signal: AbortSignal | undefined,
): Promise<{ id: string; used: number; quota: number | null }> {
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
  const { id, quota: figures } = user.data.ocs.data;
  // Negative values are Nextcloud's "unlimited" (-3) and "unknown" (-2).
  const quota = figures.quota !== undefined && figures.quota > 0 ? figures.quota : null;
  return { id, used: Math.max(0, figures.used), quota };
}

/** The owner, visible free space and size of `path` (404: undefined). */
async function readTarget(
  conn: Session['conn'],
  path: string,
  signal: AbortSignal | undefined,
  missing: 'undefined' | 'refuse' = 'undefined',
): Promise<ReadonlyMap<string, unknown> | undefined> {
  const body = await conn
    // '' is the home: a new file at the top of the account lands there.
    .propfind(
      path === '' ? conn.davUrl('') : conn.url(path),
      '0',
      path,
      MAX_SMALL_REPLY_BYTES,
      signal,
      SPACE_TARGET_BODY,
    )
    .catch((error: unknown) => {
      if (missing === 'undefined' && error instanceof NextcloudError && error.code === 'not_found')
        return undefined;
      throw error;
    });
  if (body === undefined) return undefined;
  const self = parseMultistatus(body)[0];
  if (self === undefined) throw bad('an empty listing');
  return self.props;
}

async function trashBytes(conn: Session['conn'], signal: AbortSignal | undefined): Promise<number> {
  const url = trashUrl(conn.instance.url, conn.instance.username);
  const listing = await conn
    .propfind(url, '1', '', MAX_TRASH_LISTING_BYTES, signal, SIZE_BODY)
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
    if (response.href.replace(/\/+$/, '') !== url.pathname.replace(/\/+$/, ''))
      trash += bytesOf(response.props);
  return trash;
}

/**
 * What the sharer has free, as this account sees it. A file answers no quota figures
 * (observed on 34 and 29): its folder does, when that folder is the sharer's too (a file
 * shared on its own sits in this account's folder: then nothing shows the sharer's space).
 */
async function sharerFree(
  conn: Session['conn'],
  path: string,
  owner: string,
  target: ReadonlyMap<string, unknown>,
  signal: AbortSignal | undefined,
): Promise<SharerSpace['free']> {
  if (textProp(target, 'quota-available-bytes') !== null) return freeOf(target);
  const cut = path.lastIndexOf('/');
  if (cut < 0) return 'unknown';
  const folder = await readTarget(conn, path.slice(0, cut), signal);
  return folder !== undefined && (textProp(folder, 'owner-id') ?? '') === owner
    ? freeOf(folder)
    : 'unknown';
}

/** This account's own space (what `doctor` reports). */
export async function readOwnSpace(
  { conn }: Pick<Session, 'conn'>,
  signal?: AbortSignal,
): Promise<OwnSpace> {
  const user = await readUser(conn, signal);
  return user.quota === null
    ? { whose: 'own', quota: null, used: user.used, trash: 0 }
    : { whose: 'own', quota: user.quota, used: user.used, trash: await trashBytes(conn, signal) };
}

/**
 * The space a write at `at` lands in. The caller notes when the read began: its figures
 * are as of then (or older, for a sharer's).
 */
export async function readSpace(
  { conn }: Pick<Session, 'conn'>,
  at: SpaceTarget,
  signal?: AbortSignal,
): Promise<Space> {
  // The user and the target are read side by side (one round trip, not two); a failure
  // of the user's read is still the answer, and cuts the other short.
  const cut = new AbortController();
  // Security: an item to trash must be there to be weighed (a missing one is refused, as
  // Nextcloud's 404 says, never weighed as 0 bytes). A new file's folder that is missing
  // reads as this account's own: Nextcloud refuses an upload into a missing folder.
  const targetRead = readTarget(
    conn,
    at.path,
    signal === undefined ? cut.signal : AbortSignal.any([signal, cut.signal]),
    at.item ? 'refuse' : 'undefined',
  );
  targetRead.catch(() => undefined); // awaited below, unless the user's read fails first
  const user = await readUser(conn, signal).catch((error: unknown) => {
    cut.abort();
    throw error;
  });
  const target = await targetRead;
  const item = at.item && target !== undefined ? { item: bytesOf(target) } : {};
  if (target !== undefined) {
    const owner = textProp(target, 'owner-id') ?? '';
    // Security: a folder someone else shared is their space, whatever this account's
    // quota; a mount naming no owner is nobody's own (never this account's by default).
    if (owner !== user.id)
      return {
        whose: 'sharer',
        owner,
        free: await sharerFree(conn, at.path, owner, target, signal),
        ...item,
      };
  }
  // Security: without a quota Nextcloud expires for space only on a full disk, which the
  // broker does not guard (docs/nextcloud-behaviour.md#space-driven-expiry).
  if (user.quota === null) return { whose: 'own', quota: null, used: user.used, trash: 0, ...item };
  return {
    whose: 'own',
    quota: user.quota,
    used: user.used,
    trash: await trashBytes(conn, signal),
    ...item,
  };
}
