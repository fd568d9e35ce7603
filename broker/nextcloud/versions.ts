/**
 * A file's versions (files_versions), as undo reads and restores them
 * (docs/nextcloud-behaviour.md "Versions"): `PROPFIND versions/<user>/versions/<fileid>`
 * (Depth 1) lists one entry per version, named by the mtime in seconds of the content
 * it holds, and one for the current content; `MOVE` of a version to
 * `versions/<user>/restore/target` puts it back in place, keeping the file id.
 */
import { MAX_SMALL_REPLY_BYTES } from './connection.js';
import { NextcloudError } from './errors.js';
import { discard } from './http.js';
import { versionRestoreUrl, versionsUrl, VERSION_NAME } from './history-url.js';
import { parseMultistatus, textProp } from './multistatus.js';
import { restoreMove } from './restore-move.js';
import { strictDecodeSegment } from './url.js';
import type { Session } from './session.js';

export interface FileVersion {
  /** The entry's name: the mtime in whole seconds of the content it holds. */
  readonly name: string;
  /** That mtime, in ms. */
  readonly mtime: number;
  readonly size: number;
}

/** The props the listing asks for (never `allprop`). */
export const VERSIONS_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:"><d:prop>' +
  '<d:getcontentlength/><d:getlastmodified/><d:resourcetype/>' +
  '</d:prop></d:propfind>';

function bad(what: string): NextcloudError {
  return new NextcloudError(
    'bad_response',
    `Nextcloud sent a version listing the broker cannot read (${what}): report this to the owner`,
  );
}

/**
 * The entries of the file with `fileId`, oldest first. The one named by the file's
 * current mtime stands for the current content (it cannot be read or restored as a
 * version). `not_found` when no file has the id (deleted, or in the trash bin).
 */
export async function listVersions(
  { conn }: Pick<Session, 'conn'>,
  fileId: string,
  signal?: AbortSignal,
): Promise<FileVersion[]> {
  const url = versionsUrl(conn.instance.url, conn.instance.username, fileId);
  const text = await conn
    .propfind(url, '1', '', MAX_SMALL_REPLY_BYTES, signal, VERSIONS_BODY)
    .catch((error: unknown) => {
      if (error instanceof NextcloudError && error.code === 'not_found')
        throw new NextcloudError(
          'not_found',
          `no file with id ${fileId} on instance '${conn.name}' (deleted, or in the trash bin): its versions cannot be listed`,
          { status: 404 },
        );
      throw error;
    });
  const out: FileVersion[] = [];
  for (const response of parseMultistatus(text)) {
    const name =
      strictDecodeSegment(response.href.replace(/\/+$/, '').split('/').pop() ?? '') ?? '';
    if (name === fileId) continue;
    const size = textProp(response.props, 'getcontentlength') ?? '';
    if (!VERSION_NAME.test(name) || !/^\d{1,18}$/.test(size)) throw bad('an entry');
    out.push({ name, mtime: Number(name) * 1000, size: Number(size) });
  }
  return out.sort((a, b) => a.mtime - b.mtime);
}

/**
 * Puts version `name` of the file with `fileId` back in place: the file keeps its id,
 * takes the version's mtime and a new ETag, and the content it had is saved as a
 * version named by its mtime — unless a saved version already has that name: then
 * Nextcloud drops the current content (observed on 34 and 29), so a caller that must
 * lose nothing checks the listing first. Sent once, never retried.
 */
export async function restoreVersion(
  { conn }: Pick<Session, 'conn'>,
  fileId: string,
  name: string,
  signal?: AbortSignal,
): Promise<void> {
  const { url: base, username } = conn.instance;
  const status = await restoreMove(
    conn,
    versionsUrl(base, username, fileId, name),
    versionRestoreUrl(base, username),
    [404],
    '',
    signal,
  );
  if (status === 404)
    throw new NextcloudError(
      'not_found',
      `version ${name} of file id ${fileId} is gone on instance '${conn.name}' (expired, or the file was deleted): nothing was restored`,
      { status: 404 },
    );
}

/**
 * Whether Nextcloud holds a saved content under version `name` of the file with `fileId`
 * (true), or the entry of that name only stands for the current content (false). The
 * listing cannot tell them apart (both are one entry named by an mtime), and a restore
 * over a current content whose mtime names a saved version drops the current content
 * (observed on 34 and 29), so undo asks this of the current mtime first.
 *
 * Read with `Range: bytes=0-1` (not `0-0`, which Nextcloud answers with the whole
 * content), the connection dropped after the head: a saved one answers 200 or 206, the
 * current content's entry 404; an entry whose file a restore took answers its first
 * read 500 (a PHP `TypeError`, its body cut to the version's size) and every later one
 * 404 (observed on 34 and 29). So a 500 is asked once more, and the second answer
 * decides; another 500 is an error: nothing is concluded from it.
 */
export async function versionSaved(
  { conn }: Pick<Session, 'conn'>,
  fileId: string,
  name: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const url = versionsUrl(conn.instance.url, conn.instance.username, fileId, name);
  const read = (ok: readonly number[]) =>
    conn.call(
      { method: 'GET', url, headers: { range: 'bytes=0-1' } },
      {
        idempotent: true,
        ok,
        ctx: { verb: 'GET', instance: conn.name, path: '' },
        deadline: true,
        signal,
      },
    );
  let res = await read([200, 206, 404, 500]);
  if (res.status === 500) {
    discard(res);
    res = await read([200, 206, 404]);
  }
  if (res.status === 404) {
    discard(res);
    return false;
  }
  // Saved: its bytes are not needed (the connection goes, not the content).
  res.body.on('error', () => undefined);
  res.body.destroy();
  return true;
}
