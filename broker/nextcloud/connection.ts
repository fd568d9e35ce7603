/**
 * The connection to one Nextcloud instance: credentials, the HTTP transport, timeouts,
 * the one retry of idempotent requests, and the mapping of every failure to a scrubbed
 * NextcloudError (failures.ts reads error bodies and transport failures). The verb modules (files.ts, transfers.ts, locks.ts, capabilities.ts)
 * build requests and read answers through it; client.ts puts them together.
 *
 * Security decisions, each marked below: a 401 disables the credentials for the life
 * of the connection (Nextcloud throttles the whole address after about a dozen
 * failures); only idempotent requests are retried, once; PROPFIND depth is 0 or 1.
 */
import type { Clock } from '../base/domain.js';
import { silentLogger, type Logger } from '../base/log.js';
import { secondsSince, type MetricsPort } from '../base/metrics.js';
import { createScrubber } from '../base/scrub.js';
import { AnswerRecorder, answerOf, type AnswerSink } from './answers.js';
import type { InstanceConfig } from '../config.js';
import {
  errorForStatus,
  isRefusalException,
  NextcloudError,
  type StatusContext,
  type Verb,
} from './errors.js';
import { cancelledError, sabreException, sabreMessage, transportFailure } from './failures.js';
import {
  createTransport,
  readText,
  TransportError,
  type HttpRequest,
  type HttpResponse,
  type Transport,
} from './http.js';
import { PROPFIND_BODY } from './multistatus.js';
import { buildDavUrl, parseBaseUrl } from './url.js';

/** The subset of InstanceConfig the client uses. */
export type NextcloudInstance = Pick<InstanceConfig, 'name' | 'url' | 'username' | 'app_password'>;

export interface ConnectionDeps {
  /** Per-request timeout; for streams, the idle timeout. Default 30 s. */
  timeoutMs?: number;
  logger?: Logger;
  now?: Clock;
  /** Times each request by method and status (default: not timed). */
  metrics?: Pick<MetricsPort, 'nextcloudRequest'>;
  /**
   * Where Nextcloud's answers (request ids, file ids, etags) go when a request is sent
   * outside every `answers.collect` scope (answers.ts). Default: dropped.
   */
  onAnswer?: AnswerSink;
}

const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_SMALL_REPLY_BYTES = 1024 * 1024;
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** A request before the connection adds credentials and timeouts. */
export type OutgoingRequest = Omit<HttpRequest, 'idleTimeoutMs' | 'deadlineMs'>;

export interface CallOptions {
  /** Safe to send twice (PROPFIND, GET, OCS): one retry on 5xx or a stale socket. */
  idempotent: boolean;
  /** Status codes that count as success (the response is returned unread). */
  ok: readonly number[];
  ctx: StatusContext;
  /** Whole-exchange deadline (buffered replies); streams use idle timeouts only. */
  deadline: boolean;
  /**
   * Stops the request when it fires (a grant ended under the operation). An idempotent
   * request is cut at any moment; one that changes something is stopped only before it
   * is sent (see `call`).
   */
  signal?: AbortSignal | undefined;
  /**
   * A server error whose body matches is an answer, not a hiccup: it is not retried
   * (a calendar with an event that repeats too often fails every query the same way).
   */
  permanentServerError?: RegExp;
  /**
   * Cut by `signal` in flight although not idempotent: for requests that change nothing
   * anyone sees (a chunk into the broker's own upload folder).
   */
  interruptible?: boolean;
  /** The idle timeout for this request, when it must be longer (a MOVE that assembles). */
  idleTimeoutMs?: number;
}

export function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class NextcloudConnection {
  readonly name: string;
  readonly instance: NextcloudInstance;
  readonly origin: string;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly now: Clock;
  /** Every answer's request id, to the scope that sent the request (answers.ts). */
  readonly answers: AnswerRecorder;
  readonly #transport: Transport;
  readonly #scrub: (text: string) => string;
  #authFailure: NextcloudError | undefined;
  readonly #metrics: ConnectionDeps['metrics'];
  #putRefusedFrom: number | undefined;

  constructor(instance: NextcloudInstance, deps: ConnectionDeps = {}) {
    this.name = instance.name;
    this.instance = instance;
    this.#metrics = deps.metrics;
    this.#scrub = createScrubber(
      [instance.app_password],
      [[instance.username, instance.app_password]],
    );
    const base = parseBaseUrl(instance.url);
    this.origin = base.origin;
    this.#transport = createTransport(base);
    this.timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.logger = deps.logger ?? silentLogger;
    this.now = deps.now ?? (() => Date.now());
    this.answers = new AnswerRecorder(deps.onAnswer);
  }

  /** Drop kept-alive connections (on shutdown, and in tests). */
  close(): void {
    this.#transport.close();
  }

  /** The smallest body a single PUT was refused for (413) on this instance, if any. */
  get putRefusedFrom(): number | undefined {
    return this.#putRefusedFrom;
  }

  /** Remembers a 413 to a PUT of `size` bytes: larger new files go up in chunks at once. */
  notePutRefused(size: number): void {
    this.#putRefusedFrom = Math.min(this.#putRefusedFrom ?? size, size);
  }

  /** Run a verb; every error that leaves is a scrubbed NextcloudError. */
  async guard<T>(run: () => Promise<T>): Promise<T> {
    // Security: after a 401 the credentials are not used again (no request is sent).
    if (this.#authFailure !== undefined) throw this.#authFailure;
    try {
      return await run();
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  scrubbed(err: unknown): NextcloudError {
    if (err instanceof NextcloudError) {
      if (err === this.#authFailure) return err;
      return new NextcloudError(err.code, this.#scrub(err.message), {
        retry: err.retry,
        ...(err.status === undefined ? {} : { status: err.status }),
      });
    }
    const detail = err instanceof Error ? err.message : String(err);
    this.logger.error('nextcloud client failure', {
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

  /** The WebDAV URL of a canonical path ('' = the root). */
  davUrl(path: string): URL {
    return buildDavUrl(this.instance.url, this.instance.username, path);
  }

  /** The URL of a non-root canonical path. */
  url(path: string): URL {
    if (path === '')
      throw new NextcloudError(
        'invalid_path',
        'invalid path: the instance root can only be listed',
      );
    return this.davUrl(path);
  }

  async propfind(
    url: URL,
    depth: '0' | '1',
    path: string,
    limit: number,
    signal?: AbortSignal,
    body: string = PROPFIND_BODY,
  ): Promise<string> {
    // Security: Depth is 0 or 1, never infinity (Nextcloud honours it, recursively).
    const { text } = await this.exchange(
      {
        method: 'PROPFIND',
        url,
        headers: { 'content-type': 'application/xml; charset=utf-8', depth },
        body,
      },
      {
        idempotent: true,
        ok: [207],
        ctx: { verb: 'PROPFIND', instance: this.name, path },
        signal,
      },
      limit,
    );
    return text;
  }

  /** A request whose whole reply is read (with a deadline over the exchange). */
  async exchange(
    request: OutgoingRequest,
    opts: Omit<CallOptions, 'deadline'>,
    limit = MAX_SMALL_REPLY_BYTES,
  ): Promise<{ res: HttpResponse; text: string }> {
    const res = await this.call(request, { ...opts, deadline: true });
    try {
      return { res, text: await readText(res, limit) };
    } catch (err) {
      throw this.transportError(err, opts.ctx.verb, opts.ctx.path);
    }
  }

  /**
   * Send a request with auth; map failures. Returns the response (body unread) when its
   * status is one of `ok`.
   */
  async call(request: OutgoingRequest, opts: CallOptions): Promise<HttpResponse> {
    for (let attempt = 1; ; attempt += 1) {
      if (this.#authFailure !== undefined) throw this.#authFailure;
      // Security: a grant that ended stops every request not yet sent.
      if (opts.signal?.aborted === true)
        throw cancelledError(this.name, opts.ctx.verb, opts.ctx.path);
      const canRetry = opts.idempotent && attempt === 1;
      let res: HttpResponse;
      try {
        // Only a request that changes nothing is cut in flight: a MKCOL, MOVE, DELETE or
        // LOCK that went out is carried out by Nextcloud anyway, so its answer is awaited
        // and reported as it is (an upload is cut through its body instead).
        const cut = opts.idempotent || opts.interruptible === true ? opts.signal : undefined;
        res = await this.#send(request, opts.deadline, cut, opts.idleTimeoutMs);
      } catch (err) {
        // A kept-alive socket the server had already closed: the request never arrived.
        if (canRetry && err instanceof TransportError && err.code === 'network' && err.reusedSocket)
          continue;
        throw this.transportError(err, opts.ctx.verb, opts.ctx.path);
      }
      if (opts.ok.includes(res.status)) return res;

      const body = await readText(res, MAX_ERROR_BODY_BYTES).catch(() => '');
      if (res.status === 401) {
        // Security: never retry a 401 and never use these credentials again; Nextcloud
        // slows every failure down and then throttles the broker's whole address.
        const failure = this.scrubbed(errorForStatus(401, opts.ctx));
        this.#authFailure = failure;
        this.logger.error('nextcloud rejected the app password; instance disabled', {
          instance: this.name,
        });
        throw failure;
      }
      const serverException = sabreException(body);
      if (
        res.status >= 500 &&
        res.status !== 501 &&
        canRetry &&
        !isRefusalException(serverException) &&
        opts.permanentServerError?.test(body) !== true
      ) {
        this.logger.warn('nextcloud server error, retrying once', {
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
        ...(serverException === undefined ? {} : { serverException }),
      });
    }
  }

  #send(
    request: OutgoingRequest,
    deadline: boolean,
    signal: AbortSignal | undefined,
    idleTimeoutMs = this.timeoutMs,
  ): Promise<HttpResponse> {
    const basic = Buffer.from(`${this.instance.username}:${this.instance.app_password}`).toString(
      'base64',
    );
    const started = performance.now();
    const sent = this.#transport.send({
      ...request,
      headers: {
        ...request.headers,
        authorization: `Basic ${basic}`,
        'user-agent': 'nextcloud-access-broker',
      },
      idleTimeoutMs,
      ...(deadline ? { deadlineMs: this.timeoutMs } : {}),
      ...(signal === undefined ? {} : { signal }),
    });
    // Registered now, so it runs in the sender's scope and before the sender reads on.
    sent.then(
      (res) => {
        const answer = answerOf(request.method, res.status, res.headers);
        if (answer !== undefined) this.answers.record(answer);
      },
      () => undefined,
    );
    const metrics = this.#metrics;
    if (metrics === undefined) return sent;
    // Only the instance, the verb and the status: never the URL, which holds the path.
    const observe = (status: number | 'error') =>
      metrics.nextcloudRequest(this.name, request.method, status, secondsSince(started));
    sent.then(
      (res) => observe(res.status),
      () => observe('error'),
    );
    return sent;
  }

  /** Any failure of an exchange as a NextcloudError (scrubbed when it is not one yet). */
  transportError(err: unknown, verb: Verb, path: string): NextcloudError {
    if (err instanceof NextcloudError) return err;
    if (!(err instanceof TransportError)) return this.scrubbed(err);
    return transportFailure(err, { instance: this.name, timeoutMs: this.timeoutMs, verb, path });
  }
}
