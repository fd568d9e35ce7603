/**
 * Rules for names a request creates (PUT, MKCOL, MOVE/COPY destination, LOCK on a missing
 * path). `*.part` is Nextcloud's upload temp name, and the server treats any such path as
 * an existing, empty, hidden file (observed: its PROPFIND answers 207 with size 0): a
 * create-only PUT or a move with `Overwrite: F` onto it is 412, a MKCOL 405, and a plain
 * PUT 400 on 34 (a forbidden file type), 423 on 29 (series.ts).
 */
import { baseName } from '../paths.js';
import type { Reply } from '../reply.js';
import type { SeriesTraits } from '../series.js';

export function isPartName(rel: string): boolean {
  return /\.part$/i.test(baseName(rel));
}

/** A `*.part` name cannot be written: answers as the series does and returns true. */
export function refusePartName(reply: Reply, series: SeriesTraits, rel: string): boolean {
  if (!isPartName(rel)) return false;
  const answer = series.partName(baseName(rel));
  reply.sabre(answer.status, answer.exception, answer.message);
  return true;
}
