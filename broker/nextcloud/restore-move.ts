/**
 * The one request every restore of Nextcloud's keeps is: a `MOVE` of the kept item to
 * its `restore/` collection, without `Overwrite` (versions and the trash bin answer 412
 * to `Overwrite: F` wherever the item would go), sent once and never retried.
 */
import type { NextcloudConnection } from './connection.js';
import { discard } from './http.js';

/**
 * Sends the restore; answers its status: 201/204, or one of `refusals`, which the verb
 * words (any other status is the connection's error).
 */
export async function restoreMove(
  conn: NextcloudConnection,
  from: URL,
  to: URL,
  refusals: readonly number[],
  path: string,
  signal: AbortSignal | undefined,
): Promise<number> {
  const res = await conn.call(
    { method: 'MOVE', url: from, headers: { destination: to.href } },
    {
      idempotent: false,
      ok: [201, 204, ...refusals],
      ctx: { verb: 'MOVE', instance: conn.name, path },
      deadline: true,
      signal,
    },
  );
  discard(res);
  return res.status;
}
