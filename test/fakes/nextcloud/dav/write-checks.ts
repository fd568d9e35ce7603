/** Rules for names a request creates (PUT, MKCOL, MOVE/COPY destination, LOCK on a missing path). */
import { baseName } from '../paths.js';
import { EX, type Reply } from '../reply.js';

/** `*.part` is Nextcloud's upload temp name: creating one answers 423. */
export function refusePartName(reply: Reply, rel: string): boolean {
  const name = baseName(rel);
  if (!/\.part$/i.test(name)) return false;
  reply.sabre(423, EX.fileLocked, `"${name}" is locked`);
  return true;
}
