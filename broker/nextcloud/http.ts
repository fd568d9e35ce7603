/**
 * The HTTP transport of the Nextcloud client: node:http(s) with full control of verbs,
 * headers, status codes, streaming bodies and timeouts. Knows nothing about WebDAV.
 *
 * Why not the `webdav` library: it hides statuses (a create-only PUT answered 412
 * returns `false`), keeps only the first propstat of a response, cannot send an
 * explicit prop allow-list for listings, and offers no idle timeouts for streams.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable, Transform } from 'node:stream';
import type { IncomingHttpHeaders, IncomingMessage, ClientRequest } from 'node:http';
import { CodedError } from '../base/coded-error.js';

/** `cancelled`: the caller's abort signal fired (a grant ended under the request). */
export type TransportErrorCode = 'timeout' | 'network' | 'body' | 'cancelled';

export class TransportError extends CodedError<TransportErrorCode> {
  override readonly name = 'TransportError';
  constructor(
    code: TransportErrorCode,
    /** A short, secret-free description (an errno code such as ECONNREFUSED). */
    readonly detail: string,
    /** The request went out on a kept-alive socket (a stale one can reset at once). */
    readonly reusedSocket: boolean,
  ) {
    super(code, `${code}: ${detail}`);
  }
}

export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** A string is sent with its Content-Length; a stream is piped with backpressure. */
  body?: string | Readable;
  /** For a stream body: sent as Content-Length and enforced (else chunked). */
  contentLength?: number;
  /** For a stream body: ask the server first, so a refusal costs no upload. */
  expectContinue?: boolean;
  /** Socket idle timeout (no bytes either way), and the connect timeout. */
  idleTimeoutMs: number;
  /** A deadline for the whole exchange, reply body included (buffered replies). */
  deadlineMs?: number;
  /** Cuts the exchange (request and reply) when it fires. */
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
  request: ClientRequest;
  /** Set when this exchange was ended by one of our timeouts, or by the caller's signal. */
  readonly state: { timedOut: boolean; cancelled: boolean };
}

export interface Transport {
  send(request: HttpRequest): Promise<HttpResponse>;
  close(): void;
}

/**
 * Passes a stream body through, failing it when it is longer or shorter than the
 * announced Content-Length (Node would otherwise hang or throw from inside a pipe).
 */
function lengthGuard(size: number | undefined): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (size !== undefined && seen > size)
        callback(Object.assign(new Error('body longer than its size'), { code: 'BODY_TOO_LONG' }));
      else callback(null, chunk);
    },
    flush(callback) {
      if (size !== undefined && seen !== size)
        callback(
          Object.assign(new Error('body shorter than its size'), { code: 'BODY_TOO_SHORT' }),
        );
      else callback();
    },
  });
}

/** How long to wait for `100 Continue` before sending the body anyway (as curl does). */
const CONTINUE_FALLBACK_MS = 1000;

function errnoOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : 'connection error';
}

export function createTransport(url: URL): Transport {
  const secure = url.protocol === 'https:';
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: 16 })
    : new http.Agent({ keepAlive: true, maxSockets: 16 });
  const requestFn = secure ? https.request : http.request;

  const send = (r: HttpRequest): Promise<HttpResponse> =>
    new Promise((resolve, reject) => {
      const state = { timedOut: false, cancelled: false };
      const headers: Record<string, string> = { ...r.headers };
      if (typeof r.body === 'string')
        headers['content-length'] = String(Buffer.byteLength(r.body, 'utf8'));
      else if (r.body !== undefined && r.contentLength !== undefined)
        headers['content-length'] = String(r.contentLength);
      if (r.body instanceof Readable && r.expectContinue) headers['expect'] = '100-continue';

      if (r.signal?.aborted === true) {
        reject(new TransportError('cancelled', 'cancelled', false));
        return;
      }
      const req = requestFn(r.url, { method: r.method, headers, agent, timeout: r.idleTimeoutMs });
      const signal = r.signal;
      if (signal !== undefined) {
        const cancel = (): void => {
          state.cancelled = true;
          req.destroy(new TransportError('cancelled', 'cancelled', req.reusedSocket));
        };
        signal.addEventListener('abort', cancel, { once: true });
        req.once('close', () => signal.removeEventListener('abort', cancel));
      }
      const deadline =
        r.deadlineMs === undefined
          ? undefined
          : setTimeout(() => {
              state.timedOut = true;
              req.destroy(new TransportError('timeout', 'deadline', req.reusedSocket));
            }, r.deadlineMs);
      if (deadline !== undefined) req.once('close', () => clearTimeout(deadline));
      let settled = false;
      let bodyError: unknown;
      const fail = (err: TransportError): void => {
        if (settled) return;
        settled = true;
        reject(err);
      };
      req.on('timeout', () => {
        state.timedOut = true;
        req.destroy(new TransportError('timeout', 'no progress', req.reusedSocket));
      });
      req.on('error', (err) => {
        if (state.cancelled) fail(new TransportError('cancelled', 'cancelled', req.reusedSocket));
        else if (state.timedOut)
          fail(new TransportError('timeout', 'no progress', req.reusedSocket));
        else if (bodyError !== undefined)
          fail(new TransportError('body', errnoOf(bodyError ?? err), req.reusedSocket));
        else fail(new TransportError('network', errnoOf(err), req.reusedSocket));
      });
      req.on('response', (res) => {
        settled = true;
        // An answer before the upload finished leaves the connection unusable: close it
        // once the reply is read.
        if (r.body instanceof Readable)
          res.once('end', () => {
            if (!req.writableFinished) req.destroy();
          });
        if (deadline !== undefined) res.once('end', () => clearTimeout(deadline));
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: res,
          request: req,
          state,
        });
      });

      if (r.body === undefined) req.end();
      else if (typeof r.body === 'string') req.end(r.body, 'utf8');
      else {
        const body = r.body;
        const guard = lengthGuard(r.contentLength);
        const onBodyError = (err: unknown): void => {
          if (bodyError !== undefined) return;
          bodyError = err ?? new Error('body failed');
          body.unpipe(guard);
          req.destroy(new TransportError('body', errnoOf(err), req.reusedSocket));
        };
        body.on('error', onBodyError);
        guard.on('error', onBodyError);
        let started = false;
        let fallback: NodeJS.Timeout | undefined;
        const start = (): void => {
          if (started || settled) return;
          started = true;
          if (fallback !== undefined) clearTimeout(fallback);
          body.pipe(guard).pipe(req);
        };
        req.once('response', () => {
          // The server answered before the upload finished (e.g. 412 on If-None-Match):
          // stop reading the caller's body; the caller still owns it.
          if (fallback !== undefined) clearTimeout(fallback);
          body.unpipe(guard);
        });
        if (r.expectContinue) {
          req.once('continue', start);
          // The server's silence counts from when the request reached it, not while it
          // waited for a free connection of the pool: a body sent early fills buffers,
          // and a gated body's commit check (uploads.ts) would pass before its time.
          req.once('socket', (socket) => {
            const arm = (): void => {
              if (!started && !settled) fallback = setTimeout(start, CONTINUE_FALLBACK_MS);
            };
            if (socket.connecting) socket.once('connect', arm);
            else arm();
          });
          req.once('close', () => clearTimeout(fallback));
        } else start();
      }
    });

  return {
    send,
    close: () => agent.destroy(),
  };
}

/**
 * Read a whole (small) response body as text. Rejects with a TransportError when the
 * connection fails or the body exceeds `limitBytes` (then the connection is dropped).
 */
export function readText(res: HttpResponse, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    const finish = (err?: TransportError): void => {
      if (done) return;
      done = true;
      if (err) reject(err);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const lost = (): TransportError =>
      res.state.cancelled
        ? new TransportError('cancelled', 'cancelled', res.request.reusedSocket)
        : res.state.timedOut
          ? new TransportError('timeout', 'no progress', res.request.reusedSocket)
          : new TransportError('network', 'connection closed mid-reply', res.request.reusedSocket);
    res.body.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > limitBytes) {
        finish(new TransportError('body', 'reply too large', res.request.reusedSocket));
        res.request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    res.body.on('end', () => finish());
    res.body.on('error', () => finish(lost()));
    res.body.on('close', () => finish(lost()));
  });
}

/** Drain and drop a response body we do not need (keeps the socket reusable). */
export function discard(res: HttpResponse): void {
  res.body.on('error', () => undefined);
  res.body.resume();
}

/**
 * Wrap a response body as a Readable with an idle timeout that runs only while the
 * consumer is reading (a slow consumer applying backpressure is not "idle"), and a
 * check that exactly Content-Length bytes arrived.
 */
export function idleStream(
  res: HttpResponse,
  idleMs: number,
  toError: (kind: 'timeout' | 'network' | 'short') => Error,
): Readable {
  const source = res.body;
  const expected = Number(res.headers['content-length']);
  const hasLength = res.headers['content-length'] !== undefined && Number.isSafeInteger(expected);
  let received = 0;
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  // Our own idle timer replaces the socket timeout, which would fire under backpressure.
  res.request.setTimeout(0);

  // One timer, re-armed with refresh() on progress: a new timer per 64 KiB chunk cost
  // an allocation and a timer-list insertion each.
  const stopTimer = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const startTimer = (): void => {
    if (timer !== undefined) {
      timer.refresh();
      return;
    }
    timer = setTimeout(() => {
      res.state.timedOut = true;
      out.destroy(toError('timeout'));
    }, idleMs);
  };

  const out = new Readable({
    highWaterMark: 256 * 1024,
    read() {
      startTimer();
      source.resume();
    },
    destroy(err, callback) {
      stopTimer();
      if (!ended) res.request.destroy();
      callback(err);
    },
  });

  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (out.push(chunk)) startTimer();
    else {
      // Backpressure: the consumer is slow, not the server.
      stopTimer();
      source.pause();
    }
  });
  source.on('end', () => {
    ended = true;
    stopTimer();
    if (hasLength && received !== expected) out.destroy(toError('short'));
    else out.push(null);
  });
  source.on('error', () => {
    if (!ended) out.destroy(toError(res.state.timedOut ? 'timeout' : 'network'));
  });
  source.on('close', () => {
    if (!ended && !out.destroyed) out.destroy(toError(res.state.timedOut ? 'timeout' : 'network'));
  });
  source.pause();
  return out;
}
