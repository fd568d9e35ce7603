/**
 * The trash bin (files_trashbin) as undo reads it and restores from it
 * (docs/nextcloud-behaviour.md "The trash bin: names and restores"): `PROPFIND
 * trashbin/<user>/trash/` (Depth 1) lists the items, each named `<name>.d<seconds>`
 * with where it came from; `MOVE` of an item to `trashbin/<user>/restore/<item>` puts
 * it back (see `restoreTrash` for why without `Overwrite: F`).
 */
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { NextcloudError } from './errors.js';
import { FILE_ID, trashRestoreUrl, trashUrl } from './history-url.js';
import { parseMultistatus, textProp } from './multistatus.js';
import { restoreMove } from './restore-move.js';
import { pathComponents, strictDecodeSegment } from './url.js';
import type { Session } from './session.js';
import { MAX_TRASH_LISTING_BYTES } from './space.js';

export interface TrashItem {
  /** The item's name in the trash bin (`<name>.d<seconds>`): what a restore names. */
  readonly item: string;
  /** The name it had. */
  readonly name: string;
  /** Where it was, without a leading slash (Nextcloud writes one for some shared items). */
  readonly original: string;
  /** When it was deleted, in ms. */
  readonly deletedAt: number;
  /** The file id it has (a receiving account's own copy of a shared item has another). */
  readonly fileId: string;
  readonly size: number;
  readonly kind: 'file' | 'folder';
}

/** The props the listing asks for (never `allprop`). */
export const TRASH_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>' +
  '<nc:trashbin-filename/><nc:trashbin-original-location/><nc:trashbin-deletion-time/>' +
  '<oc:fileid/><oc:size/><d:resourcetype/>' +
  '</d:prop></d:propfind>';

function bad(): NextcloudError {
  return new NextcloudError(
    'bad_response',
    'Nextcloud sent a trash bin listing the broker cannot read: report this to the owner',
  );
}

function off(instance: string): NextcloudError {
  return new NextcloudError(
    'trash_disabled',
    `the trash bin is off on instance '${instance}': there is nothing to list or restore; ask the owner to enable files_trashbin`,
    { status: 404 },
  );
}

/** Every item in the trash bin, the newest first. */
export async function listTrash(
  { conn }: Pick<Session, 'conn'>,
  signal?: AbortSignal,
): Promise<TrashItem[]> {
  const url = trashUrl(conn.instance.url, conn.instance.username);
  const text = await conn
    .propfind(url, '1', '', MAX_TRASH_LISTING_BYTES, signal, TRASH_BODY)
    .catch((error: unknown) => {
      if (error instanceof NextcloudError && error.code === 'not_found') throw off(conn.name);
      throw error;
    });
  const out: TrashItem[] = [];
  for (const { href, props } of parseMultistatus(text)) {
    if (href.replace(/\/+$/, '') === url.pathname.replace(/\/+$/, '')) continue;
    const item = strictDecodeSegment(href.replace(/\/+$/, '').split('/').pop() ?? '') ?? '';
    const name = textProp(props, 'trashbin-filename');
    const original = textProp(props, 'trashbin-original-location');
    const deleted = textProp(props, 'trashbin-deletion-time') ?? '';
    const fileId = textProp(props, 'fileid') ?? '';
    const size = textProp(props, 'size') ?? '';
    if (
      item === '' ||
      name === null ||
      original === null ||
      !/^\d{1,15}$/.test(deleted) ||
      !FILE_ID.test(fileId) ||
      !/^\d{1,18}$/.test(size)
    )
      throw bad();
    const type = props.get('resourcetype');
    const folder = typeof type === 'object' && type !== null && 'collection' in type;
    out.push({
      item,
      name,
      original: original.replace(/^\/+/, ''),
      deletedAt: Number(deleted) * 1000,
      fileId,
      size: Number(size),
      kind: folder ? 'folder' : 'file',
    });
  }
  return out.sort((a, b) => b.deletedAt - a.deletedAt);
}

/** What a restore looks at: is something at a path, and which file. */
const FILE_ID_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>' +
  '<oc:fileid/><d:resourcetype/>' +
  '</d:prop></d:propfind>';

/** The file id at a canonical path (undefined: nothing is there). */
async function fileIdAt(
  conn: Session['conn'],
  path: string,
  signal: AbortSignal | undefined,
): Promise<{ fileId: string; folder: boolean } | undefined> {
  const text = await conn
    .propfind(conn.davUrl(path), '0', path, MAX_SMALL_REPLY_BYTES, signal, FILE_ID_BODY)
    .catch((error: unknown) => {
      if (error instanceof NextcloudError && error.code === 'not_found') return undefined;
      throw error;
    });
  const self = text === undefined ? undefined : parseMultistatus(text)[0];
  if (self === undefined) return undefined;
  const type = self.props.get('resourcetype');
  return {
    fileId: textProp(self.props, 'fileid') ?? '',
    folder: typeof type === 'object' && type !== null && 'collection' in type,
  };
}

export interface RestoredItem {
  /**
   * Where the item is now (canonical path). Null when another client took its place
   * between the check and the restore: Nextcloud then put it beside that file, as
   * "<name> (restored)".
   */
  readonly path: string | null;
}

/**
 * Puts trash bin `item` back where it was, or into the root when that folder is gone
 * (as Nextcloud does). Nextcloud answers a restore with `Overwrite: F` 412 whatever the
 * place, and without it restores beside a taken place under a new name: so the place is
 * checked first (`destination_exists` when taken, nothing sent), the MOVE goes without
 * `Overwrite`, and the file found there afterwards must have the item's id. Nothing is
 * ever overwritten. The MOVE is sent once, never retried.
 */
export async function restoreTrash(
  { conn }: Pick<Session, 'conn'>,
  item: Pick<TrashItem, 'item' | 'original' | 'fileId'>,
  signal?: AbortSignal,
): Promise<RestoredItem> {
  const { url: base, username } = conn.instance;
  // Security: the original location is the server's; it becomes a path only through
  // the same checks as any path the broker sends (url.ts), or nothing is sent.
  const components = pathComponents(item.original);
  const name = components[components.length - 1];
  if (name === undefined)
    throw new NextcloudError('invalid_path', 'a trash bin item without a name');
  const folder = components.slice(0, -1).join('/');
  const parent = folder === '' ? undefined : await fileIdAt(conn, folder, signal);
  const place = parent?.folder === true ? `${folder}/${name}` : name;
  if ((await fileIdAt(conn, place, signal)) !== undefined)
    throw new NextcloudError(
      'destination_exists',
      `'${item.item}' was not restored on instance '${conn.name}': something is at '${place}' now; it stays in the trash bin`,
      { status: 412 },
    );
  // No `Overwrite: F` (always 412 here); the place was checked just now.
  const status = await restoreMove(
    conn,
    trashUrl(base, username, item.item),
    trashRestoreUrl(base, username, item.item),
    [404],
    place,
    signal,
  );
  if (status === 404)
    throw new NextcloudError(
      'not_found',
      `'${item.item}' is no longer in the trash bin of instance '${conn.name}' (restored, or expired)`,
      { status: 404 },
    );
  // The restore is done: this read is not cut by the signal.
  const there = await fileIdAt(conn, place, undefined);
  return { path: there?.fileId === item.fileId ? place : null };
}
