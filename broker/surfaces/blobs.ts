/**
 * The blob endpoint: `GET|PUT /transfer/blobs/<ticket>` (transfer token required), the
 * HTTP side of operations/blobs.ts. A download is `200` with the bytes and, over
 * HTTP/1.1, the trailers `x-broker-sha256` and `x-broker-size`; `304` with the `etag` and
 * no body when the client's `If-None-Match` is still the file's etag. A download stopped
 * after its head (a revoke, an expiry, Nextcloud failing) ends with the trailer
 * `x-broker-envelope` saying why instead, for a client that sent `TE: trailers` (any
 * other is cut mid-body). Every other answer is an envelope as JSON with the status
 * `blobStatus` gives it. No answer carries a secret.
 */
import type { Request, Response } from 'express';
import type { CallContext } from '../base/call.js';
import { ok, type Envelope } from '../base/envelope.js';
import type { MetricsPort } from '../base/metrics.js';
import { BLOB_SHA256_AT_END_HEADER, BLOB_SHA256_HEADER, BLOB_TRAILERS } from '../base/protocol.js';
import { scrubDeep } from '../base/scrub.js';
import type { BlobTransfers, DownloadSink } from '../operations/blobs.js';
import { answer } from './answer.js';

/** What a download that went out whole counts as (its answer is the bytes, not an envelope). */
const OK = { status: 'ok' } as const;

export interface BlobEndpointDeps {
  readonly transfers: BlobTransfers;
  readonly scrub: (text: string) => string;
  readonly correlationId: () => string;
  /** A blob stream with no progress for this long is dropped. */
  readonly idleTimeoutMs: number;
  /** Counts each answer and the bytes of each whole transfer (default: nothing counted). */
  readonly metrics?: MetricsPort;
}

/** The HTTP status carrying an envelope on the blob endpoint. */
export function blobStatus(envelope: Envelope): number {
  if (envelope.status === 'ok') return 200;
  if (envelope.status === 'refused') {
    if (envelope.code === 'ticket_invalid') return 404;
    if (envelope.code === 'conflict') return 409;
    if (envelope.code === 'invalid_arguments') return 400;
    if (envelope.code === 'too_large') return 413;
    return 403;
  }
  if (envelope.code === 'rate_limited') return 429;
  return envelope.code === 'internal' ? 500 : 502;
}

/** Declared in the head of a chunked download: what its end may carry. */
const DOWNLOAD_TRAILERS = Object.values(BLOB_TRAILERS).join(', ');

/**
 * An envelope as a header value: its JSON with every character outside printable ASCII
 * written as `\uXXXX` (so it parses back to the same value and no byte can end the field).
 */
export function envelopeTrailer(envelope: Envelope): string {
  return JSON.stringify(envelope).replace(
    /[^\x20-\x7e]/g,
    (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function contentLength(req: Request): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^[0-9]{1,16}$/.test(header)) return undefined;
  const n = Number(header);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** The sha256 a PUT declares in BLOB_SHA256_HEADER (checked by the operation), if any. */
function declaredSha256(req: Request): string | undefined {
  const header = req.headers[BLOB_SHA256_HEADER];
  return typeof header === 'string' ? header : undefined;
}

/** BLOB_SHA256_AT_END_HEADER as sent (checked by the operation), if it was. */
function sha256AtEnd(req: Request): string | undefined {
  const header = req.headers[BLOB_SHA256_AT_END_HEADER];
  return typeof header === 'string' ? header : undefined;
}

export class BlobEndpoint {
  readonly #deps: BlobEndpointDeps;

  constructor(deps: BlobEndpointDeps) {
    this.#deps = deps;
  }

  async download(req: Request, res: Response, id: string): Promise<void> {
    // Trailers need chunked encoding (HTTP/1.1). An HTTP/1.0 client gets the bytes with a
    // Content-Length (a cut stream shows as short) and no sha256 trailer.
    const chunked = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1;
    // Only a client that said it reads trailers (`TE: trailers`, as the CLI does) learns
    // why a stream was cut from its end; any other is cut mid-body, so that a client which
    // ignores trailers sees a broken transfer rather than a short file that ended cleanly.
    const te = [req.headers.te ?? ''].flat().join(',');
    const readsTrailers = chunked && /(^|,)\s*trailers\s*(;|,|$)/i.test(te);
    // The etag of the copy the client holds (the CLI sends it for an unedited fetched
    // copy); the operation checks its form before it goes anywhere.
    const ifNoneMatch = req.headers['if-none-match'];
    const sink: DownloadSink = {
      // A client is idle only while bytes wait for it to take them: one waiting for the
      // broker (Nextcloud slow to answer, with its own timeout) is not.
      redeemed: () => this.#armIdleTimeout(res, () => res.writableLength > 0),
      unchanged: ({ etag }) => {
        res.writeHead(304, { 'cache-control': 'no-store', etag });
        res.end();
      },
      start: ({ size, etag }) => {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'cache-control': 'no-store',
          ...(chunked
            ? { trailer: DOWNLOAD_TRAILERS }
            : size === null
              ? {}
              : { 'content-length': String(size) }),
          ...(size === null ? {} : { [BLOB_TRAILERS.size]: String(size) }),
          ...(etag === null ? {} : { etag }),
        });
        return res;
      },
      finish: ({ sha256, size }) => {
        if (chunked)
          res.addTrailers({ [BLOB_TRAILERS.sha256]: sha256, [BLOB_TRAILERS.size]: String(size) });
        res.end();
      },
      get gone() {
        return res.destroyed;
      },
    };
    const outcome = await this.#deps.transfers.download(
      this.#ctx('blob_get'),
      id,
      sink,
      ifNoneMatch,
    );
    this.#deps.metrics?.answered('transfer', 'blob_get', outcome.ok ? OK : outcome.envelope);
    if (outcome.ok) {
      if (!outcome.value.unchanged) this.#deps.metrics?.bytesMoved('download', outcome.value.size);
      return;
    }
    if (readsTrailers && res.headersSent && !res.destroyed && !res.writableEnded) {
      // The head went out, so the status cannot say no any more: the trailer does. Without
      // `x-broker-sha256` the bytes sent are never a complete file, whatever a client does.
      res.addTrailers({
        [BLOB_TRAILERS.envelope]: envelopeTrailer(scrubDeep(outcome.envelope, this.#deps.scrub)),
      });
      res.end();
      return;
    }
    this.#send(res, outcome.envelope);
  }

  async upload(req: Request, res: Response, id: string): Promise<void> {
    const outcome = await this.#deps.transfers.upload(this.#ctx('blob_put'), id, {
      // A client is idle only while the broker reads its body and none comes: once it
      // has all arrived, or while Nextcloud does not take it yet (the broker stopped
      // reading), the client waits on the broker, whose Nextcloud calls have their own
      // timeouts. Cutting it then lost the answer of an upload that still committed.
      redeemed: () => this.#armIdleTimeout(res, () => !req.complete && !req.isPaused()),
      body: req,
      length: contentLength(req),
      declaredSha256: declaredSha256(req),
      sha256AtEnd: sha256AtEnd(req),
      get complete() {
        return req.complete;
      },
      get gone() {
        return res.destroyed;
      },
    });
    const envelope = answer(outcome, (v) =>
      ok(
        v.kind === 'checkin'
          ? `checked in "${v.path}": ${v.size} bytes stored, verified and unlocked`
          : `stored "${v.path}": ${v.size} bytes, verified`,
        {
          path: v.path,
          sha256: v.sha256,
          size: v.size,
          etag: v.etag,
          verified: true,
          ...(v.kind === 'checkin' ? { unlocked: v.unlocked } : {}),
        },
      ),
    );
    this.#deps.metrics?.answered('transfer', 'blob_put', envelope);
    if (outcome.ok) this.#deps.metrics?.bytesMoved('upload', outcome.value.size);
    // A refusal may come while the client is still sending (a revoke mid-upload, a bad
    // ticket before the body). The answer goes out on a connection that stays open: had
    // the broker closed it, the client's next write would meet a reset and the client
    // would lose the answer ("connection reset" instead of "refused"). Node never takes
    // the rest of the body for a next request (it is framed by Content-Length); it
    // discards it, or leaves it unread until the keep-alive timeout closes the
    // connection. The CLI closes as soon as it has read the answer.
    this.#send(res, envelope);
  }

  #ctx(tool: string): CallContext {
    return { surface: 'transfer', tool, correlationId: this.#deps.correlationId() };
  }

  /**
   * Security: a client that stops sending or reading cannot hold a connection and a
   * Nextcloud request open: after idleTimeoutMs with no byte either way, the exchange is
   * cut, if `idle()` says the wait is the client's.
   */
  #armIdleTimeout(res: Response, idle: () => boolean): void {
    res.setTimeout(this.#deps.idleTimeoutMs, () => {
      if (idle()) res.destroy();
    });
  }

  #send(res: Response, envelope: Envelope): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (typeof envelope.retry_after === 'number') {
      res.set('Retry-After', String(envelope.retry_after));
    }
    res.status(blobStatus(envelope)).json(scrubDeep(envelope, this.#deps.scrub));
  }
}
