/**
 * Stateless list and search cursors:
 * `base64url(JSON {v:1, i, p, q?, o}) "." base64url(HMAC-SHA256)`.
 *
 * Security: the agent holds the cursor, so it is signed with a key derived from the
 * instance's app password (it survives a broker restart, yet cannot be forged without
 * the password) and names the instance and path it belongs to, and for a search the
 * query (`q`; a list cursor has none): a cursor cannot be tampered with or replayed
 * against another listing or search. It carries only an offset; the wall still checks
 * the path of every page.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { NextcloudError } from './errors.js';

const CursorSchema = z
  .object({
    v: z.literal(1),
    i: z.string(),
    p: z.string(),
    q: z.string().optional(),
    o: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  })
  .strict();

export interface CursorCodec {
  /** `query`: the search this cursor pages through; none for a listing. */
  encode(path: string, offset: number, query?: string): string;
  /** The offset, or throws `bad_cursor` (also when `query` is not the cursor's own). */
  decode(cursor: string, path: string, query?: string): number;
}

/** Cursor strings longer than this are refused before any parsing. */
const MAX_CURSOR_LENGTH = 1024;

export function createCursorCodec(instance: string, appPassword: string): CursorCodec {
  const key = Buffer.from(
    hkdfSync('sha256', appPassword, `instance:${instance}`, 'nextcloud-broker list cursor v1', 32),
  );
  const sign = (payload: string): Buffer => createHmac('sha256', key).update(payload).digest();
  const bad = (why: string): NextcloudError =>
    new NextcloudError(
      'bad_cursor',
      `the cursor is not valid for this listing or search (${why}): call again without a cursor`,
    );

  return {
    encode(path, offset, query) {
      const fields = query === undefined ? { p: path } : { p: path, q: query };
      const payload = Buffer.from(
        JSON.stringify({ v: 1, i: instance, ...fields, o: offset }),
      ).toString('base64url');
      return `${payload}.${sign(payload).toString('base64url')}`;
    },
    decode(cursor, path, query) {
      if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH) throw bad('malformed');
      const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(cursor);
      if (!m) throw bad('malformed');
      const [, payload = '', mac = ''] = m;
      const given = Buffer.from(mac, 'base64url');
      const expected = sign(payload);
      // Security: constant-time comparison of the MAC.
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        throw bad('signature does not match');
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      } catch {
        throw bad('malformed');
      }
      const result = CursorSchema.safeParse(parsed);
      if (!result.success) throw bad('malformed');
      if (result.data.i !== instance) throw bad('it belongs to another instance');
      if (result.data.p !== path) throw bad('it belongs to another folder');
      if (result.data.q !== query)
        throw bad(
          query === undefined
            ? 'it belongs to a search'
            : result.data.q === undefined
              ? 'it belongs to a listing'
              : 'it belongs to another search',
        );
      return result.data.o;
    },
  };
}
