/**
 * The file verbs over WebDAV: list a folder, create one, move or rename (trash.ts deletes
 * into the trash bin). Each takes a canonical path (the exact value the wall checked) and the
 * operation's abort signal. Security decisions, each marked below: moves never
 * overwrite; deletes happen only while the trash bin is on and only where Nextcloud
 * would trash (never a mount it would unshare); none of these requests is retried.
 */
import { answeredFileId } from './answers.js';
import { NextcloudError } from './errors.js';
import { childrenOf, decodeHref, parseMultistatus, type Entry } from './multistatus.js';
import type { Session } from './session.js';

const MAX_PAGE_SIZE = 1000;
/** A Depth-1 listing larger than this is refused rather than held in memory. */
const MAX_LISTING_BYTES = 32 * 1024 * 1024;

/**
 * Children of a folder ('' = root), folders first then by code point; `pageSize`
 * 1-1000. `next` is a signed cursor for this instance and path only.
 */
export async function listFolder(
  { conn, cursors }: Pick<Session, 'conn' | 'cursors'>,
  path: string,
  cursor?: string,
  pageSize = 200,
  signal?: AbortSignal,
): Promise<{ entries: Entry[]; next?: string }> {
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)
    throw new NextcloudError(
      'invalid_argument',
      `the page size must be an integer from 1 to ${MAX_PAGE_SIZE}`,
    );
  const offset = cursor === undefined ? 0 : cursors.decode(cursor, path);
  const url = conn.davUrl(path);
  const text = await conn.propfind(url, '1', path, MAX_LISTING_BYTES, signal);
  const responses = parseMultistatus(text);
  const all = childrenOf(responses, path, decodeHref(url.pathname, conn.origin), conn.origin);
  const entries = all.slice(offset, offset + pageSize);
  const end = offset + entries.length;
  return end < all.length ? { entries, next: cursors.encode(path, end) } : { entries };
}

/** What a MKCOL or MOVE answered of the item: its file id (`OC-FileId`), null when none. */
export interface Placed {
  readonly fileId: string | null;
}

/** Create one folder (its parent must exist). */
export function makeFolder(
  { conn, namespace }: Pick<Session, 'conn' | 'namespace'>,
  path: string,
  signal?: AbortSignal,
): Promise<Placed> {
  return namespace.run(async () => {
    // Not retried: a repeat of a MKCOL that did succeed would answer 405 "exists".
    const { res } = await conn.exchange(
      { method: 'MKCOL', url: conn.url(path), headers: {} },
      { idempotent: false, ok: [201], ctx: { verb: 'MKCOL', instance: conn.name, path }, signal },
    );
    return { fileId: answeredFileId(res.headers) ?? null };
  }, signal);
}

/**
 * Rename or move; never overwrites an existing target. `beforeMove` runs just before the
 * MOVE, inside the same namespace step (the caller's check of where the bytes land):
 * what it throws stops the move, nothing sent.
 */
export async function move(
  { conn, namespace }: Pick<Session, 'conn' | 'namespace'>,
  from: string,
  to: string,
  signal?: AbortSignal,
  beforeMove?: () => Promise<void>,
): Promise<Placed> {
  const urls = { source: conn.url(from), target: conn.url(to) };
  checkMove(from, to);
  // Security: a move waits for a trash's check and DELETE to finish (and the reverse),
  // so it can never carry a received share into a folder already checked for one; and
  // no other change of the broker's namespace comes between `beforeMove` and the MOVE.
  return namespace.run(async () => {
    await beforeMove?.();
    return moveNow(conn, from, to, urls, signal);
  }, signal);
}

/** Refuses what is never sent: the same path, a normalisation twin, its own subtree. */
function checkMove(from: string, to: string): void {
  if (from === to)
    throw new NextcloudError('invalid_argument', 'the source and the target are the same path');
  // Security: NFC and NFD spellings are one name to Nextcloud. A move between them
  // without `Overwrite: F` answers 404 after already sending the source to the trash
  // bin (with it, 412). Never sent; the wall refuses it too.
  if (
    from.normalize('NFC') === to.normalize('NFC') ||
    from.normalize('NFD') === to.normalize('NFD')
  )
    throw new NextcloudError(
      'invalid_path',
      `'${from}' and '${to}' differ only in Unicode normalisation, which Nextcloud treats as one name: choose a different name`,
    );
  if (to.normalize('NFC').startsWith(`${from.normalize('NFC')}/`))
    throw new NextcloudError(
      'conflict',
      `cannot move '${from}' into its own subtree '${to}': choose a target outside it`,
    );
}

async function moveNow(
  conn: Session['conn'],
  from: string,
  to: string,
  { source, target }: { readonly source: URL; readonly target: URL },
  signal: AbortSignal | undefined,
): Promise<Placed> {
  // Security: `Overwrite: F` — without it Nextcloud overwrites (trashes) the target.
  // Not retried: a repeated MOVE after a lost answer would fail or move twice.
  const { res } = await conn.exchange(
    {
      method: 'MOVE',
      url: source,
      headers: { destination: target.href, overwrite: 'F' },
    },
    {
      idempotent: false,
      ok: [201, 204],
      ctx: { verb: 'MOVE', instance: conn.name, path: from, to },
      signal,
    },
  );
  return { fileId: answeredFileId(res.headers) ?? null };
}
