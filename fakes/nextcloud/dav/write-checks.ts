/**
 * Rules for names a request creates (PUT, MKCOL, MOVE/COPY destination, LOCK on a missing
 * path). `*.part` is Nextcloud's upload temp name, and the server treats any such path as
 * an existing, empty, hidden file (observed: its PROPFIND answers 207 with size 0): a
 * create-only PUT or a move with `Overwrite: F` onto it is 412, a MKCOL 405, and a plain
 * PUT 423.
 */
import { baseName } from '../paths.js';
import { EX, type Reply } from '../reply.js';

export function isPartName(rel: string): boolean {
  return /\.part$/i.test(baseName(rel));
}

/** A `*.part` name cannot be written: answers 423 and returns true. */
export function refusePartName(reply: Reply, rel: string): boolean {
  if (!isPartName(rel)) return false;
  reply.sabre(423, EX.fileLocked, `"${baseName(rel)}" is locked`);
  return true;
}
