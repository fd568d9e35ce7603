/**
 * One Nextcloud instance, spoken to over WebDAV (files) and OCS (capabilities).
 *
 * Every verb takes a canonical path — the exact value the wall checked — and nothing
 * else; the client alone turns it into a URL (see url.ts). '' is the instance root and
 * is accepted only by `list`. Every error leaving this class is a NextcloudError whose
 * one-line message names the cause and the next step, scrubbed of the app password in
 * every spelling.
 *
 * Security decisions, each marked below: a 401 disables the credentials for the life
 * of the client (Nextcloud throttles the whole address after about a dozen failures);
 * only idempotent requests are retried, once; moves never overwrite; deletes happen
 * only while the trash bin is on; locks are taken only on files that exist.
 */
import type { Readable } from 'node:stream';
import type { InstanceConfig } from '../config.js';
import type { Clock } from '../base/domain.js';
import { NEXTCLOUD_MAX_UPLOAD_NAME_BYTES } from '../base/limits.js';
import { silentLogger, type Logger } from '../base/log.js';
import { CONTROL_OR_LINE_SEPARATOR, replaceRuns } from '../base/text.js';
import { createScrubber } from '../base/scrub.js';
import { parseCapabilities, type Capabilities } from './capabilities.js';
import { createCursorCodec, type CursorCodec } from './cursor.js';
import { errorForStatus, NextcloudError, type StatusContext, type Verb } from './errors.js';
import {
  createTransport,
  discard,
  idleStream,
  readText,
  TransportError,
  type HttpRequest,
  type HttpResponse,
  type Transport,
} from './http.js';
import {
  childrenOf,
  decodeHref,
  parseMultistatus,
  PROPFIND_BODY,
  selfEntry,
  type Entry,
} from './multistatus.js';
import { buildDavUrl, parseBaseUrl } from './url.js';

export type { Entry } from './multistatus.js';
export type { Capabilities } from './capabilities.js';

export interface NextcloudClientDeps {
  /** Per-request timeout; for streams, the idle timeout. Default 30 s. */
  timeoutMs?: number;
  logger?: Logger;
  now?: Clock;
  /** How long capabilities are cached. Default 60 s. */
  capabilitiesTtlMs?: number;
}

export type WriteCondition =
  { ifMatch: string; lockToken?: string } | { ifNoneMatch: '*' } | { lockToken: string };

/** The subset of InstanceConfig the client uses. */
export type NextcloudInstance = Pick<InstanceConfig, 'name' | 'url' | 'username' | 'app_password'>;

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_CAPABILITIES_TTL_MS = 60_000;
const MAX_PAGE_SIZE = 1000;
/** A Depth-1 listing larger than this is refused rather than held in memory. */
const MAX_LISTING_BYTES = 32 * 1024 * 1024;
const MAX_SMALL_REPLY_BYTES = 1024 * 1024;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MAX_LOCK_SECONDS = 7 * 24 * 3600;

/** The body of every checkout LOCK: an exclusive write lock (a token lock). */
export const LOCK_BODY =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope>' +
  '<d:locktype><d:write/></d:locktype><d:owner>nextcloud-access-broker</d:owner></d:lockinfo>';

/** `"x"`, `W/"x"`, or a bare `x` (quoted for the header); nothing that could break a header. */
function normaliseEtag(etag: string): string | undefined {
  if (typeof etag !== 'string' || etag.length > 256) return undefined;
  if (/^(W\/)?"[\x21\x23-\x7e]*"$/.test(etag)) return etag;
  if (/^[\x21\x23-\x7e]+$/.test(etag)) return `"${etag}"`;
  return undefined;
}

/** A lock token as returned by `lock` (`opaquelocktoken:…`), safe inside `<…>` and `(…)`. */
function validLockToken(token: string): boolean {
  return typeof token === 'string' && /^[\x21-\x7e]{1,256}$/.test(token) && !/[<>()]/.test(token);
}

/** The first `<s:message>` of a Sabre error body, reduced to one short printable line. */
function sabreMessage(body: string): string | undefined {
  const m = /<(?:[\w-]+:)?message\b[^>]*>([\s\S]*?)<\/(?:[\w-]+:)?message>/.exec(body);
  if (!m || m[1] === undefined) return undefined;
  const decoded = m[1]
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
  const text = replaceRuns(decoded, CONTROL_OR_LINE_SEPARATOR, ' ').replace(/\s+/g, ' ').trim();
  if (text === '') return undefined;
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** After a lost answer, a change may still have happened: say so for non-idempotent verbs. */
function nextStepAfterLostAnswer(verb: Verb): string {
  return verb === 'PROPFIND' || verb === 'GET' || verb === 'CAPABILITIES'
    ? 'try again later'
    : 'the change may still have been made, so look (list) before trying again';
}

function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A request before the client adds credentials and timeouts. */
type OutgoingRequest = Omit<HttpRequest, 'idleTimeoutMs' | 'deadlineMs'>;

interface CallOptions {
  /** Safe to send twice (PROPFIND, GET, OCS): one retry on 5xx or a stale socket. */
  idempotent: boolean;
  /** Status codes that count as success (the response is returned unread). */
  ok: readonly number[];
  ctx: StatusContext;
  /** Whole-exchange deadline (buffered replies); streams use idle timeouts only. */
  deadline: boolean;
}

export class NextcloudClient {
  readonly name: string;
  readonly #instance: NextcloudInstance;
  readonly #origin: string;
  readonly #transport: Transport;
  readonly #scrub: (text: string) => string;
  readonly #cursors: CursorCodec;
  readonly #timeoutMs: number;
  readonly #capabilitiesTtlMs: number;
  readonly #logger: Logger;
  readonly #now: Clock;
  #authFailure: NextcloudError | undefined;
  #capabilities: { value: Capabilities; at: number } | undefined;

  constructor(instance: NextcloudInstance, deps: NextcloudClientDeps = {}) {
    this.name = instance.name;
    this.#instance = instance;
    this.#scrub = createScrubber(
      [instance.app_password],
      [[instance.username, instance.app_password]],
    );
    const base = parseBaseUrl(instance.url);
    this.#origin = base.origin;
    this.#transport = createTransport(base);
    this.#cursors = createCursorCodec(instance.name, instance.app_password);
    this.#timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#capabilitiesTtlMs = deps.capabilitiesTtlMs ?? DEFAULT_CAPABILITIES_TTL_MS;
    this.#logger = deps.logger ?? silentLogger;
    this.#now = deps.now ?? (() => Date.now());
  }

  /** Drop kept-alive connections (on shutdown, and in tests). */
  close(): void {
    this.#transport.close();
  }

  // ---- public verbs -------------------------------------------------------------

  /**
   * Children of a folder ('' = root), folders first then by code point; `pageSize`
   * 1-1000. `next` is a signed cursor for this instance and path only.
   */
  list(
    path: string,
    cursor?: string,
    pageSize = 200,
  ): Promise<{ entries: Entry[]; next?: string }> {
    return this.#guard(async () => {
      if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)
        throw new NextcloudError(
          'invalid_argument',
          `the page size must be an integer from 1 to ${MAX_PAGE_SIZE}`,
        );
      const offset = cursor === undefined ? 0 : this.#cursors.decode(cursor, path);
      const url = buildDavUrl(this.#instance.url, this.#instance.username, path);
      const text = await this.#propfind(url, '1', path, MAX_LISTING_BYTES);
      const responses = parseMultistatus(text);
      const all = childrenOf(responses, path, decodeHref(url.pathname, this.#origin), this.#origin);
      const entries = all.slice(offset, offset + pageSize);
      const end = offset + entries.length;
      return end < all.length ? { entries, next: this.#cursors.encode(path, end) } : { entries };
    });
  }

  /** One file or folder (PROPFIND Depth 0). */
  stat(path: string): Promise<Entry> {
    return this.#guard(() => this.#stat(path));
  }

  /**
   * Stream a file's bytes (stat first: folders are refused). `range` is inclusive.
   * The stream fails with a NextcloudError on a stall (idle timeout) or a cut.
   */
  readStream(
    path: string,
    range?: { start: number; end?: number },
  ): Promise<{ stream: Readable; size: number | null; etag: string | null }> {
    return this.#guard(async () => {
      if (range !== undefined) {
        const { start, end } = range;
        if (
          !Number.isSafeInteger(start) ||
          start < 0 ||
          (end !== undefined && (!Number.isSafeInteger(end) || end < start))
        )
          throw new NextcloudError('invalid_argument', 'the byte range must be 0 <= start <= end');
      }
      const entry = await this.#stat(path);
      // Security: a GET of a folder answers 200 with an HTML page; never hand that out
      // as file content.
      if (entry.kind === 'folder')
        throw new NextcloudError(
          'is_folder',
          `'${path}' is a folder: list it instead of reading it`,
        );
      const headers: Record<string, string> = {};
      // Security: the bytes must belong to the file just checked. If it changed or was
      // replaced by a folder (whose GET is an HTML page) in between, the server answers
      // 412 instead of streaming something else.
      if (entry.etag !== null) headers['if-match'] = entry.etag;
      if (range !== undefined) headers['range'] = `bytes=${range.start}-${range.end ?? ''}`;
      const url = this.#url(path);
      const res = await this.#call(
        { method: 'GET', url, headers },
        {
          idempotent: true,
          ok: range === undefined ? [200] : [206],
          ctx: { verb: 'GET', instance: this.name, path },
          deadline: false,
        },
      );
      const lengthHeader = header(res, 'content-length');
      const size =
        lengthHeader !== undefined && /^\d{1,15}$/.test(lengthHeader)
          ? Number(lengthHeader)
          : range === undefined
            ? entry.size
            : null;
      const etag = normaliseEtag(header(res, 'etag') ?? '') ?? entry.etag;
      const stream = idleStream(res, this.#timeoutMs, (kind) =>
        this.#scrubbed(
          kind === 'timeout'
            ? this.#timeoutError('GET', path)
            : new NextcloudError(
                'unreachable',
                `the download of '${path}' from instance '${this.name}' broke off before the end: try again`,
              ),
        ),
      );
      return { stream, size, etag };
    });
  }

  /**
   * Stream `body` into a file (PUT), never buffered and never retried. Exactly one
   * condition: create-only (`ifNoneMatch: '*'`), replace-if-unchanged (`ifMatch`), or
   * under a lock (`lockToken`, optionally with `ifMatch`). `size` becomes Content-Length
   * and is enforced. On failure the body may be partly read; the caller still owns it.
   */
  writeStream(
    path: string,
    body: Readable,
    cond: WriteCondition,
    size?: number,
  ): Promise<{ etag: string | null }> {
    return this.#guard(async () => {
      const url = this.#url(path);
      const name = path.split('/').pop() ?? '';
      if (Buffer.byteLength(name, 'utf8') > NEXTCLOUD_MAX_UPLOAD_NAME_BYTES)
        throw new NextcloudError(
          'name_too_long',
          `'${name.slice(0, 40)}…' is too long to upload (Nextcloud fails names from ${NEXTCLOUD_MAX_UPLOAD_NAME_BYTES + 1} bytes): choose a shorter name`,
        );
      if (size !== undefined && (!Number.isSafeInteger(size) || size < 0))
        throw new NextcloudError('invalid_argument', 'the size must be a non-negative integer');
      const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
      let write: StatusContext['write'];
      // Security: every write is conditional, so nothing is overwritten by accident.
      if ('ifNoneMatch' in cond) {
        if (cond.ifNoneMatch !== '*')
          throw new NextcloudError('invalid_argument', "if_none_match must be '*'");
        headers['if-none-match'] = '*';
        write = 'create';
      } else if ('ifMatch' in cond) {
        const etag = normaliseEtag(cond.ifMatch);
        if (etag === undefined)
          throw new NextcloudError('invalid_argument', 'the etag is malformed: pass it as read');
        headers['if-match'] = etag;
        write = 'replace';
      } else write = 'locked';
      const lockToken = 'lockToken' in cond ? cond.lockToken : undefined;
      if (lockToken !== undefined) {
        if (!validLockToken(lockToken))
          throw new NextcloudError(
            'invalid_argument',
            'the lock token is malformed: pass it as returned',
          );
        headers['if'] = `(<${lockToken}>)`;
        if (write === 'replace') write = 'replace_locked';
      } else if (write === 'locked')
        throw new NextcloudError(
          'invalid_argument',
          'a write needs if_match, if_none_match or a lock token',
        );

      // Security: never retried — the body stream is consumed by the first attempt.
      const res = await this.#call(
        {
          method: 'PUT',
          url,
          headers,
          body,
          ...(size === undefined ? {} : { contentLength: size }),
          expectContinue: true,
        },
        {
          idempotent: false,
          ok: [200, 201, 204],
          ctx: { verb: 'PUT', instance: this.name, path, write },
          deadline: false,
        },
      );
      discard(res);
      return { etag: normaliseEtag(header(res, 'etag') ?? header(res, 'oc-etag') ?? '') ?? null };
    });
  }

  /** Create one folder (its parent must exist). */
  mkdir(path: string): Promise<void> {
    return this.#guard(async () => {
      // Not retried: a repeat of a MKCOL that did succeed would answer 405 "exists".
      await this.#exchange(
        { method: 'MKCOL', url: this.#url(path), headers: {} },
        { idempotent: false, ok: [201], ctx: { verb: 'MKCOL', instance: this.name, path } },
      );
    });
  }

  /** Rename or move; never overwrites an existing target. */
  move(from: string, to: string): Promise<void> {
    return this.#guard(async () => {
      const source = this.#url(from);
      const target = this.#url(to);
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
      // Security: `Overwrite: F` — without it Nextcloud overwrites (trashes) the target.
      // Not retried: a repeated MOVE after a lost answer would fail or move twice.
      await this.#exchange(
        {
          method: 'MOVE',
          url: source,
          headers: { destination: target.href, overwrite: 'F' },
        },
        {
          idempotent: false,
          ok: [201, 204],
          ctx: { verb: 'MOVE', instance: this.name, path: from, to },
        },
      );
    });
  }

  /** Delete into the trash bin; refused when the trash bin is off. */
  trash(path: string): Promise<void> {
    return this.#guard(async () => {
      const url = this.#url(path);
      // Security: a DELETE is permanent when the trash bin is off. Ask afresh (not the
      // cache) so a trash bin switched off a minute ago is noticed.
      const caps = await this.#fetchCapabilities();
      if (!caps.undelete)
        throw new NextcloudError(
          'trash_disabled',
          `the trash bin is off on instance '${this.name}', so a delete would be permanent: nothing was deleted; ask the owner to enable files_trashbin`,
        );
      await this.#exchange(
        { method: 'DELETE', url, headers: {} },
        { idempotent: false, ok: [200, 204], ctx: { verb: 'DELETE', instance: this.name, path } },
      );
    });
  }

  /** RFC 4918 exclusive write lock on an existing file; returns `opaquelocktoken:…`. */
  lock(path: string, timeoutSeconds: number): Promise<{ token: string }> {
    return this.#guard(async () => {
      if (
        !Number.isSafeInteger(timeoutSeconds) ||
        timeoutSeconds < 1 ||
        timeoutSeconds > MAX_LOCK_SECONDS
      )
        throw new NextcloudError(
          'invalid_argument',
          `the lock timeout must be 1 to ${MAX_LOCK_SECONDS} seconds`,
        );
      // Security: an RFC LOCK on a missing path creates an empty file, and a lock on a
      // folder does not protect the files in it: lock existing files only.
      const entry = await this.#stat(path);
      if (entry.kind === 'folder')
        throw new NextcloudError(
          'is_folder',
          `'${path}' is a folder: only files can be checked out`,
        );
      const url = this.#url(path);
      const { res, text } = await this.#exchange(
        {
          method: 'LOCK',
          url,
          headers: {
            'content-type': 'application/xml; charset=utf-8',
            depth: '0',
            timeout: `Second-${timeoutSeconds}`,
          },
          body: LOCK_BODY,
        },
        { idempotent: false, ok: [200, 201], ctx: { verb: 'LOCK', instance: this.name, path } },
      );
      const fromHeader = /^<([^<>]*)>$/.exec(header(res, 'lock-token') ?? '')?.[1];
      const fromBody =
        /<(?:[\w-]+:)?locktoken\b[^>]*>\s*<(?:[\w-]+:)?href\b[^>]*>\s*([^<\s]+)\s*</.exec(
          text,
        )?.[1];
      const token = fromHeader ?? fromBody;
      if (token === undefined || !validLockToken(token))
        throw new NextcloudError(
          'bad_response',
          `Nextcloud locked '${path}' without returning a usable lock token: the lock may stay until it expires; report this to the owner`,
        );
      if (res.status === 201) {
        // The file vanished between the stat and the LOCK, and the LOCK created an empty
        // one. Remove exactly that file (under our token), then report the path missing.
        await this.#removeCreatedByLock(url, path, token);
        throw new NextcloudError(
          'not_found',
          `'${path}' was deleted while it was being checked out: check the path with list`,
        );
      }
      return { token };
    });
  }

  /** Release a lock taken by `lock`. */
  unlock(path: string, token: string): Promise<void> {
    return this.#guard(async () => {
      const url = this.#url(path);
      if (!validLockToken(token))
        throw new NextcloudError(
          'invalid_argument',
          'the lock token is malformed: pass it as returned',
        );
      await this.#exchange(
        { method: 'UNLOCK', url, headers: { 'lock-token': `<${token}>` } },
        { idempotent: false, ok: [200, 204], ctx: { verb: 'UNLOCK', instance: this.name, path } },
      );
    });
  }

  /** Trash bin and locking support, cached for `capabilitiesTtlMs` (60 s). */
  capabilities(): Promise<Capabilities> {
    return this.#guard(async () => {
      const cached = this.#capabilities;
      if (cached !== undefined && this.#now() - cached.at < this.#capabilitiesTtlMs)
        return cached.value;
      return this.#fetchCapabilities();
    });
  }

  // ---- internals ------------------------------------------------------------------

  /** Run a verb; every error that leaves is a scrubbed NextcloudError. */
  async #guard<T>(run: () => Promise<T>): Promise<T> {
    // Security: after a 401 the credentials are not used again (no request is sent).
    if (this.#authFailure !== undefined) throw this.#authFailure;
    try {
      return await run();
    } catch (err) {
      throw this.#scrubbed(err);
    }
  }

  #scrubbed(err: unknown): NextcloudError {
    if (err instanceof NextcloudError) {
      if (err === this.#authFailure) return err;
      return new NextcloudError(err.code, this.#scrub(err.message), {
        retry: err.retry,
        ...(err.status === undefined ? {} : { status: err.status }),
      });
    }
    const detail = err instanceof Error ? err.message : String(err);
    this.#logger.error('nextcloud client failure', {
      instance: this.name,
      detail: this.#scrub(detail),
    });
    return new NextcloudError(
      'bad_response',
      this.#scrub(
        `unexpected failure talking to instance '${this.name}': report this to the owner`,
      ),
    );
  }

  /** The URL of a non-root canonical path. */
  #url(path: string): URL {
    if (path === '')
      throw new NextcloudError(
        'invalid_path',
        'invalid path: the instance root can only be listed',
      );
    return buildDavUrl(this.#instance.url, this.#instance.username, path);
  }

  async #stat(path: string): Promise<Entry> {
    const url = this.#url(path);
    const text = await this.#propfind(url, '0', path, MAX_SMALL_REPLY_BYTES);
    return selfEntry(
      parseMultistatus(text),
      path,
      decodeHref(url.pathname, this.#origin),
      this.#origin,
    );
  }

  async #propfind(url: URL, depth: '0' | '1', path: string, limit: number): Promise<string> {
    // Security: Depth is 0 or 1, never infinity (Nextcloud honours it, recursively).
    const { text } = await this.#exchange(
      {
        method: 'PROPFIND',
        url,
        headers: { 'content-type': 'application/xml; charset=utf-8', depth },
        body: PROPFIND_BODY,
      },
      { idempotent: true, ok: [207], ctx: { verb: 'PROPFIND', instance: this.name, path } },
      limit,
    );
    return text;
  }

  async #fetchCapabilities(): Promise<Capabilities> {
    const url = new URL(
      `${this.#origin}${parseBaseUrl(this.#instance.url).pathname.replace(/\/+$/, '')}/ocs/v2.php/cloud/capabilities`,
    );
    url.searchParams.set('format', 'json');
    const { text } = await this.#exchange(
      {
        method: 'GET',
        url,
        headers: { 'ocs-apirequest': 'true', accept: 'application/json' },
      },
      { idempotent: true, ok: [200], ctx: { verb: 'CAPABILITIES', instance: this.name, path: '' } },
      MAX_SMALL_REPLY_BYTES,
    );
    const value = parseCapabilities(text);
    this.#capabilities = { value, at: this.#now() };
    return value;
  }

  async #removeCreatedByLock(url: URL, path: string, token: string): Promise<void> {
    try {
      await this.#exchange(
        { method: 'DELETE', url, headers: { if: `(<${token}>)` } },
        { idempotent: false, ok: [200, 204], ctx: { verb: 'DELETE', instance: this.name, path } },
      );
    } catch (err) {
      this.#logger.warn('could not remove the empty file a LOCK created', {
        instance: this.name,
        path,
        code: err instanceof NextcloudError ? err.code : 'unknown',
      });
    }
  }

  /** A request whose whole reply is read (with a deadline over the exchange). */
  async #exchange(
    request: OutgoingRequest,
    opts: Omit<CallOptions, 'deadline'>,
    limit = MAX_SMALL_REPLY_BYTES,
  ): Promise<{ res: HttpResponse; text: string }> {
    const res = await this.#call(request, { ...opts, deadline: true });
    try {
      return { res, text: await readText(res, limit) };
    } catch (err) {
      throw this.#transportError(err, opts.ctx.verb, opts.ctx.path);
    }
  }

  /**
   * Send a request with auth; map failures. Returns the response (body unread) when its
   * status is one of `ok`.
   */
  async #call(request: OutgoingRequest, opts: CallOptions): Promise<HttpResponse> {
    for (let attempt = 1; ; attempt += 1) {
      if (this.#authFailure !== undefined) throw this.#authFailure;
      const canRetry = opts.idempotent && attempt === 1;
      let res: HttpResponse;
      try {
        res = await this.#send(request, opts.deadline);
      } catch (err) {
        // A kept-alive socket the server had already closed: the request never arrived.
        if (canRetry && err instanceof TransportError && err.kind === 'network' && err.reusedSocket)
          continue;
        throw this.#transportError(err, opts.ctx.verb, opts.ctx.path);
      }
      if (opts.ok.includes(res.status)) return res;

      const body = await readText(res, MAX_ERROR_BODY_BYTES).catch(() => '');
      if (res.status === 401) {
        // Security: never retry a 401 and never use these credentials again; Nextcloud
        // slows every failure down and then throttles the broker's whole address.
        const failure = this.#scrubbed(errorForStatus(401, opts.ctx));
        this.#authFailure = failure;
        this.#logger.error('nextcloud rejected the app password; instance disabled', {
          instance: this.name,
        });
        throw failure;
      }
      if (res.status >= 500 && res.status !== 501 && canRetry) {
        this.#logger.warn('nextcloud server error, retrying once', {
          instance: this.name,
          verb: opts.ctx.verb,
          status: res.status,
        });
        continue;
      }
      const serverMessage = sabreMessage(body);
      throw errorForStatus(res.status, {
        ...opts.ctx,
        ...(serverMessage === undefined ? {} : { serverMessage }),
      });
    }
  }

  #send(request: OutgoingRequest, deadline: boolean): Promise<HttpResponse> {
    const basic = Buffer.from(`${this.#instance.username}:${this.#instance.app_password}`).toString(
      'base64',
    );
    return this.#transport.send({
      ...request,
      headers: {
        ...request.headers,
        authorization: `Basic ${basic}`,
        'user-agent': 'nextcloud-access-broker',
      },
      idleTimeoutMs: this.#timeoutMs,
      ...(deadline ? { deadlineMs: this.#timeoutMs } : {}),
    });
  }

  #timeoutError(verb: Verb, path: string): NextcloudError {
    return new NextcloudError(
      'timeout',
      `Nextcloud on instance '${this.name}' did not answer ${verb} '${path}' within ${Math.round(this.#timeoutMs / 1000)} s: ${nextStepAfterLostAnswer(verb)}`,
    );
  }

  #transportError(err: unknown, verb: Verb, path: string): NextcloudError {
    if (err instanceof NextcloudError) return err;
    if (!(err instanceof TransportError)) return this.#scrubbed(err);
    switch (err.kind) {
      case 'timeout':
        return this.#timeoutError(verb, path);
      case 'body':
        if (verb === 'PUT')
          return new NextcloudError(
            'aborted',
            `the upload of '${path}' to instance '${this.name}' was cut short (${err.detail}): nothing was replaced; send it again`,
          );
        return new NextcloudError(
          'bad_response',
          `Nextcloud sent too large a reply to ${verb} '${path}' on instance '${this.name}': list a smaller folder`,
        );
      default:
        return new NextcloudError(
          'unreachable',
          `cannot reach Nextcloud for instance '${this.name}' (${err.detail}): check that the server is up; ${nextStepAfterLostAnswer(verb)}`,
        );
    }
  }
}
