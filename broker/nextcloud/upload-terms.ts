/**
 * The terms of an upload (uploads.ts, chunked.ts): its condition, validated before
 * anything is sent, its options, and what Nextcloud answered to its commit.
 */
import { answeredFileId } from './answers.js';
import { header } from './connection.js';
import { NextcloudError, type StatusContext } from './errors.js';
import type { HttpResponse } from './http.js';
import { validLockToken } from './locks.js';
import { normaliseEtag } from './transfers.js';

export type WriteCondition =
  { ifMatch: string; lockToken?: string } | { ifNoneMatch: '*' } | { lockToken: string };

/** What Nextcloud answered to a committed upload. */
export interface Written {
  etag: string | null;
  /** The file's id (`OC-FileId` of the commit's answer); null when it named none. */
  fileId: string | null;
  /** Nextcloud's `X-Hash-SHA1` of the bytes it stored; null when it did not answer one. */
  sha1: string | null;
  /** Whether the upload went through a chunked upload (its `MOVE` was the commit). */
  chunked: boolean;
  /** Why a new file went up in chunks rather than one PUT (for the answer's warnings). */
  warning?: string;
}

export interface UploadOptions {
  /** The size of each chunk of a chunked upload (replacements, and a refused PUT). */
  chunkSize: number;
  /** A new file above this many bytes goes up in chunks (the owner's proxy limit). */
  putLimit?: number;
  /**
   * Runs once the whole body is on its way and before anything is committed; throwing
   * refuses the commit (the upload is then cut or its folder deleted, and the error
   * rethrown). The caller checks here that the body matched and the grants still hold.
   */
  beforeCommit?: () => void | Promise<void>;
  /** A grant that ended: stops the upload before its commit. */
  signal?: AbortSignal | undefined;
}

/** The write precondition, validated: what each step sends for it. */
export interface Precondition {
  write: NonNullable<StatusContext['write']>;
  /** Quoted, safe for a header. */
  etag?: string;
  lockToken?: string;
}

/** Validates a condition (exactly one, well formed) before anything is sent. */
export function precondition(cond: WriteCondition): Precondition {
  // Security: every write is conditional, so nothing is overwritten by accident.
  if ('ifNoneMatch' in cond) {
    if (cond.ifNoneMatch !== '*')
      throw new NextcloudError('invalid_argument', "if_none_match must be '*'");
    return { write: 'create' };
  }
  let etag: string | undefined;
  if ('ifMatch' in cond) {
    etag = normaliseEtag(cond.ifMatch);
    if (etag === undefined)
      throw new NextcloudError('invalid_argument', 'the etag is malformed: pass it as read');
  }
  const lockToken = 'lockToken' in cond ? cond.lockToken : undefined;
  if (lockToken !== undefined && !validLockToken(lockToken))
    throw new NextcloudError(
      'invalid_argument',
      'the lock token is malformed: pass it as returned',
    );
  if (etag === undefined && lockToken === undefined)
    throw new NextcloudError(
      'invalid_argument',
      'a write needs if_match, if_none_match or a lock token',
    );
  return {
    write: lockToken === undefined ? 'replace' : etag === undefined ? 'locked' : 'replace_locked',
    ...(etag === undefined ? {} : { etag }),
    ...(lockToken === undefined ? {} : { lockToken }),
  };
}

/**
 * The hash every upload asks Nextcloud for (`X-Hash`), of the bytes it received and wrote.
 *
 * Security: sha1, not sha256, and the choice is deliberate. The file's identity stays the
 * sha256 the broker computes of the body (checked against the client's before the commit,
 * recorded in the audit log and the answer); Nextcloud's hash only confirms that Nextcloud
 * got the bytes the broker sent, which the broker hashes the same way. Nextcloud computes
 * it in PHP, whose sha256 runs at ~170 MB/s against sha1's ~800 MB/s (measured on the
 * kit's servers), so sha256 more than doubled the server's work per upload (a 256 MiB PUT:
 * 1.0 s plain, 1.4 s with sha1, 2.1 s with sha256). A collision cannot be used here: the
 * bytes are fixed by the broker before they leave it, so a forgery needs someone who can
 * rewrite the TLS connection to Nextcloud, and whoever can do that holds the app password
 * and needs no forgery. md5 would be as fast in PHP but slower in the broker.
 */
export const VERIFY_HASH = 'sha1';

/** `X-Hash-SHA1` of an answer, when it is one (40 lowercase hex digits). */
export function answeredHash(res: HttpResponse): string | null {
  const value = header(res, 'x-hash-sha1')?.trim();
  return value !== undefined && /^[0-9a-f]{40}$/.test(value) ? value : null;
}

/** What an upload's committing answer says of the file: its ETag, Nextcloud's hash, its id. */
export function committed(res: HttpResponse): Pick<Written, 'etag' | 'sha1' | 'fileId'> {
  return {
    etag: answeredEtag(res),
    sha1: answeredHash(res),
    fileId: answeredFileId(res.headers) ?? null,
  };
}

/** The ETag (or OC-ETag) of an answer, normalised. */
export function answeredEtag(res: HttpResponse): string | null {
  return normaliseEtag(header(res, 'etag') ?? header(res, 'oc-etag') ?? '') ?? null;
}
