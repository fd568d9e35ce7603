/**
 * `X-Hash` on a PUT (observed on Nextcloud 29.0.5): the server hashes the file it stored
 * and answers `X-Hash-SHA256` / `X-Hash-MD5` / `X-Hash-SHA1`. The request value is
 * case-sensitive and names one algorithm, or `all`; anything else gets no hash.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import type { Faults } from '../types.js';

const HEADERS = { md5: 'X-Hash-MD5', sha1: 'X-Hash-SHA1', sha256: 'X-Hash-SHA256' } as const;
type Algorithm = keyof typeof HEADERS;

function algorithms(requested: string | undefined): Algorithm[] {
  if (requested === 'all') return ['md5', 'sha1', 'sha256'];
  return requested === 'md5' || requested === 'sha1' || requested === 'sha256' ? [requested] : [];
}

/** The hex hashes `X-Hash` asked for, of some bytes. */
export type Hashes = Partial<Record<Algorithm, string>>;

/** A pass-through that hashes what it carries as `requested` asks, in one pass over a body. */
export function hashingPassThrough(requested: string | undefined): {
  stream: Transform;
  digests: () => Hashes;
} {
  const wanted = algorithms(requested);
  const hashes = wanted.map((a) => createHash(a));
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      for (const h of hashes) h.update(chunk);
      done(null, chunk);
    },
  });
  let out: Hashes | undefined;
  const digests = (): Hashes =>
    (out ??= Object.fromEntries(wanted.map((a, i) => [a, hashes[i]?.digest('hex') ?? ''])));
  return { stream, digests };
}

/** The hash headers for hashes computed on the way in, as `hashHeaders` would answer them. */
export function knownHashHeaders(
  requested: string | undefined,
  hashes: Hashes,
  fault: Faults['xHash'],
): Record<string, string> {
  const wanted = algorithms(requested);
  if (wanted.length === 0 || fault === 'none') return {};
  const lie = fault === 'wrong';
  return Object.fromEntries(
    wanted.map((a) => [
      HEADERS[a],
      lie
        ? createHash(a)
            .update(`not what was stored ${hashes[a] ?? ''}`)
            .digest('hex')
        : (hashes[a] ?? ''),
    ]),
  );
}

/**
 * The hash headers for the stored file at `absPath`, as asked for by `requested`; the
 * `xHash` fault makes them lie or leave them out.
 */
export async function hashHeaders(
  requested: string | undefined,
  absPath: string,
  fault: Faults['xHash'],
): Promise<Record<string, string>> {
  const wanted = algorithms(requested);
  if (wanted.length === 0 || fault === 'none') return {};
  const hashes = wanted.map((a) => createHash(a));
  if (fault === 'wrong') for (const h of hashes) h.update('not what was stored');
  for await (const chunk of createReadStream(absPath) as AsyncIterable<Buffer>)
    for (const h of hashes) h.update(chunk);
  return Object.fromEntries(wanted.map((a, i) => [HEADERS[a], hashes[i]?.digest('hex') ?? '']));
}
