/**
 * The blob endpoint (`/transfer/blobs/<ticket>`) spoken as the CLI speaks it, with
 * control over every byte: GET streams bytes (size and sha256 trailers), PUT streams a
 * body with a Content-Length and answers a JSON envelope. A download can pause after
 * some bytes to let something happen mid-stream; an upload can stop half way. What the
 * broker then answered, or that it cut the connection, is the result: this client
 * never rejects.
 */
import { request, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call } from './mcp.js';
import { TRANSFER_TOKEN } from './tokens.js';

export interface BlobDownload {
  /** 0 when the connection was cut before any answer. */
  readonly status: number;
  readonly body: Buffer;
  /** Bytes received. */
  readonly received: number;
  readonly headers: IncomingHttpHeaders;
  readonly trailers: Record<string, string | undefined>;
  /** The response ended normally (false when the broker cut the stream). */
  readonly complete: boolean;
  /** Why the connection failed before any answer (status 0). */
  readonly cut?: string;
}

export interface BlobUpload {
  /** 0 when the broker cut the connection without answering. */
  readonly status: number;
  /** The JSON answer; `{ unparsed }` when it was not JSON, `{ cut }` when it broke off. */
  readonly json: Record<string, unknown>;
}

/**
 * GETs a blob (with `headers` besides the token's); after `pauseAfter` bytes it pauses,
 * awaits `midway()`, then resumes.
 */
export function getBlob(
  base: string,
  blobUrl: string,
  token: string,
  opts: {
    pauseAfter?: number;
    midway?: () => Promise<void>;
    headers?: Record<string, string>;
    /** On a connection of its own, never one an earlier (cut) exchange left in the pool. */
    fresh?: boolean;
    /** Cuts the exchange (the client goes away) when it aborts. */
    signal?: AbortSignal;
  } = {},
): Promise<BlobDownload> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let paused = false;
    let settled = false;
    const settle = (answer: BlobDownload): void => {
      if (settled) return;
      settled = true;
      resolve(answer);
    };
    const req = request(
      new URL(blobUrl, base),
      {
        headers: { ...opts.headers, authorization: `Bearer ${token}` },
        ...(opts.fresh === true ? { agent: false } : {}),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      },
      (res) => {
        const done = (): void =>
          settle({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks),
            received,
            headers: res.headers,
            trailers: res.trailers,
            complete: res.complete,
          });
        res.on('data', (c: Buffer) => {
          received += c.length;
          chunks.push(c);
          if (!paused && opts.pauseAfter !== undefined && received >= opts.pauseAfter) {
            paused = true;
            res.pause();
            void (opts.midway?.() ?? Promise.resolve()).then(() => res.resume());
          }
        });
        res.on('end', done);
        // A stream cut by the broker (grant revoked) ends in an error or a close, not 'end'.
        res.on('aborted', done);
        res.on('error', done);
        res.on('close', done);
      },
    );
    // A connection the broker cut before answering (the grant ended) is an answer too.
    req.on('error', (e: NodeJS.ErrnoException) =>
      settle({
        status: 0,
        body: Buffer.alloc(0),
        received,
        headers: {},
        trailers: {},
        complete: false,
        cut: e.code ?? e.message,
      }),
    );
    req.end();
  });
}

/**
 * PUTs `body` (Content-Length announced, `headers` override), sends the first
 * `sendFirst` bytes, awaits `midway()`, then sends the rest if the connection still
 * stands. Resolves with the broker's answer.
 */
export function putBlob(
  base: string,
  blobUrl: string,
  token: string,
  body: Buffer,
  opts: { headers?: Record<string, string>; sendFirst?: number; midway?: () => Promise<void> } = {},
): Promise<BlobUpload> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (answer: BlobUpload): void => {
      if (settled) return;
      settled = true;
      resolve(answer);
    };
    const cut = (e: NodeJS.ErrnoException): Record<string, unknown> => ({
      cut: e.code ?? e.message,
    });
    const req = request(
      new URL(blobUrl, base),
      {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/octet-stream',
          'content-length': String(body.length),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown>;
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            json = { unparsed: text.slice(0, 200) };
          }
          settle({ status: res.statusCode ?? 0, json });
        });
        res.on('error', (e: NodeJS.ErrnoException) =>
          settle({ status: res.statusCode ?? 0, json: cut(e) }),
        );
      },
    );
    // The broker may refuse and close before reading the body, or cut the upload when
    // the grant ends: status 0, and the reason in `cut`.
    req.on('error', (e: NodeJS.ErrnoException) => settle({ status: 0, json: cut(e) }));
    const first = opts.sendFirst ?? body.length;
    if (first >= body.length) {
      req.end(body);
      return;
    }
    req.write(body.subarray(0, first), () => {
      void (opts.midway?.() ?? Promise.resolve()).then(() => {
        if (!req.destroyed) req.end(body.subarray(first));
      });
    });
  });
}

/**
 * Starts a blob PUT announcing all of `body` but sends only its first `bytes`; returns
 * the request, for the caller to cut (`destroy()`) once the upload is under way.
 */
export function startPartialPut(
  base: string,
  blobUrl: string,
  token: string,
  body: Buffer,
  bytes: number,
  headers: Record<string, string> = {},
): ClientRequest {
  const req = request(new URL(blobUrl, base), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/octet-stream',
      'content-length': String(body.length),
      ...headers,
    },
  });
  // The cut is the point: its error is expected.
  req.on('error', () => undefined);
  req.write(body.subarray(0, bytes));
  return req;
}

/**
 * A file's etag as a client learns it: the `ETag` of the blob GET that a `read` ticket
 * opens (the read tool answers `etag: null`; the etag comes with the bytes).
 */
export async function fetchedEtag(
  base: string,
  transfer: Client,
  path: string,
  opts: { token?: string; instance?: string } = {},
): Promise<string> {
  const ticket = await call(transfer, 'read', { instance: opts.instance ?? 'personal', path });
  const got = await getBlob(base, String(ticket.blob_url), opts.token ?? TRANSFER_TOKEN, {
    fresh: true,
  });
  const etag = got.headers.etag;
  if (got.status !== 200 || typeof etag !== 'string')
    throw new Error(`fetchedEtag: the blob GET of ${path} answered ${got.status} without an ETag`);
  return etag;
}

/**
 * A whole upload as the CLI makes it: the `write` tool's ticket (`condition`: one of
 * `if_none_match: '*'`, `if_match`, `lock_token`), then the PUT; the broker's answer.
 */
export async function uploadVia(
  base: string,
  transfer: Client,
  path: string,
  body: Buffer,
  condition: Record<string, string>,
  instance = 'personal',
): Promise<BlobUpload> {
  const ticket = await call(transfer, 'write', { instance, path, size: body.length, ...condition });
  if (ticket.status !== 'ok') return { status: 0, json: ticket };
  return putBlob(base, String(ticket.blob_url), TRANSFER_TOKEN, body);
}

/** A whole download as the CLI makes it: the `read` tool's ticket, then the GET. */
export async function downloadVia(
  base: string,
  transfer: Client,
  path: string,
  instance = 'personal',
): Promise<BlobDownload> {
  const ticket = await call(transfer, 'read', { instance, path });
  return getBlob(base, String(ticket.blob_url), TRANSFER_TOKEN);
}
