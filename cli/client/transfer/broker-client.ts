/**
 * Talks to the broker's transfer surface: MCP tool calls on `POST /transfer`, and
 * byte streams on `/transfer/blobs/<ticket>` (see docs/transfer-protocol.md).
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CliError } from './errors.js';
import { requestFor } from './http-request.js';
import { parseJson } from './json.js';
import { asEnvelope, envelopeFailure, type Envelope } from './envelope.js';
import type { ClientEnv } from './env.js';
import {
  BLOB_SHA256_AT_END_HEADER,
  BLOB_SHA256_HEADER,
  SHA256_AT_END_BYTES,
  BLOB_TRAILERS,
  SHA256_HEX,
  type TicketView,
} from '../../../broker/base/protocol.js';
import type {
  ReceivedAnswer,
  TransferArgs,
  TransferToolName,
} from '../../../broker/base/transfer-tools.js';
import { BROKER_VERSION } from '../../../broker/base/version.js';
import { McpCallError, McpHttpClient } from './mcp-http.js';

/** A broker answer body as an envelope; read at most 64 KiB (an answer is one short line). */
async function readEnvelope(res: IncomingMessage): Promise<Envelope | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > 65_536) break;
    chunks.push(chunk);
  }
  return asEnvelope(parseJson(Buffer.concat(chunks).toString('utf8')));
}

/**
 * The envelope a cut download's trailer carries; an unreadable one is still a cut
 * (an error envelope: exit 2), never a success.
 */
function trailerEnvelope(value: string | undefined): Envelope | undefined {
  if (value === undefined) return undefined;
  const parsed = asEnvelope(parseJson(value));
  return parsed !== undefined && parsed.status !== 'ok'
    ? parsed
    : { status: 'error', message: 'the broker stopped the transfer and gave no readable reason' };
}

/**
 * A transfer tool's `ok` answer: the envelope, and the fields the tool declares
 * (broker/base/transfer-tools.ts) by name, each still to be checked where it is read.
 */
export type ToolAnswer<N extends TransferToolName> = Pick<
  Envelope,
  'status' | 'message' | 'code' | 'retry' | 'hint' | 'warnings' | 'next'
> &
  ReceivedAnswer<N>;

/** The blob URL of a ticket answer; its absence means the CLI and broker disagree. */
export function blobUrlOf(ticket: { readonly [K in keyof TicketView]?: unknown }): string {
  const url = ticket.blob_url;
  if (typeof url === 'string') return url;
  throw new CliError(
    'infrastructure',
    'the broker gave no blob URL',
    'check that the CLI and broker versions match',
  );
}

function unreachable(env: ClientEnv, cause: unknown): CliError {
  const code =
    (cause as { cause?: { code?: string } }).cause?.code ?? (cause as { code?: string }).code;
  return new CliError(
    'infrastructure',
    `broker unreachable at ${env.brokerUrl.origin}${code !== undefined ? ` (${code})` : ''}`,
    'check BROKER_URL and that `broker serve` is running; retry later',
  );
}

function authFailure(): CliError {
  return new CliError(
    'usage',
    'the broker rejected BROKER_TRANSFER_TOKEN (401)',
    'set BROKER_TRANSFER_TOKEN to tokens.transfer from the broker config (not the agent token)',
  );
}

/** A blob GET answered 200: what the broker announced, and the bytes still to read. */
export interface BlobStream {
  readonly unchanged: false;
  readonly size: number | null;
  readonly etag: string | null;
  /** Streams the bytes into the writable `open` gives (see saveBlob). */
  save(open: () => Promise<Writable>): Promise<{ sha256: string; size: number }>;
  /** Drops the bytes unread (the caller will not take them). */
  discard(): void;
}

/** The broker's answer to a blob GET: the bytes, or that the caller's copy is current. */
export type BlobAnswer = BlobStream | { readonly unchanged: true; readonly etag: string };

/**
 * Streams a 200 blob answer into the writable `open` gives (opened only now, so nothing
 * is created locally for a refusal). Resolves with what the broker says it streamed
 * (the `x-broker-sha256` / `x-broker-size` trailers), for the caller to compare; a
 * stream the broker cut ends with the `x-broker-envelope` trailer instead, which
 * becomes its failure (a revoke: exit 3 with the code).
 */
async function saveBlob(
  res: IncomingMessage,
  open: () => Promise<Writable>,
): Promise<{ sha256: string; size: number }> {
  let sink: Writable;
  try {
    sink = await open();
  } catch (err) {
    res.destroy();
    throw err;
  }
  try {
    await pipeline(res, sink);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(
      'infrastructure',
      'the connection to the broker dropped during the transfer',
      'retry later; nothing was staged',
    );
  }
  const cut = trailerEnvelope(res.trailers[BLOB_TRAILERS.envelope]);
  if (cut !== undefined) throw envelopeFailure(cut, 'transfer');
  const sha256 = res.trailers[BLOB_TRAILERS.sha256];
  const size = Number(res.trailers[BLOB_TRAILERS.size]);
  if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256) || !Number.isSafeInteger(size)) {
    throw new CliError(
      'infrastructure',
      'the transfer ended without the broker confirming it (no checksum trailer)',
      'retry; nothing was staged',
    );
  }
  return { sha256, size };
}

export class TransferClient {
  readonly #mcp: McpHttpClient;

  readonly #env: ClientEnv;

  constructor(env: ClientEnv) {
    this.#env = env;
    this.#mcp = new McpHttpClient(new URL('/transfer', env.brokerUrl), `Bearer ${env.token}`, {
      name: 'broker-cli',
      version: BROKER_VERSION,
    });
  }

  #mapCallError(err: unknown, tool: string): CliError {
    if (!(err instanceof McpCallError)) return unreachable(this.#env, err);
    const { failure } = err;
    switch (failure.kind) {
      case 'http':
        if (failure.status === 401) return authFailure();
        return new CliError(
          'infrastructure',
          `broker answered HTTP ${failure.status}`,
          'retry later; see the broker log',
        );
      case 'network':
        return unreachable(this.#env, failure);
      case 'timeout':
        return new CliError(
          'infrastructure',
          `the broker did not answer within a minute (calling ${tool})`,
          'retry later; see the broker log',
        );
      case 'protocol':
        return new CliError(
          'infrastructure',
          `the broker's ${tool} answer was not understood: ${failure.detail}`,
          'check that the CLI and broker versions match',
        );
    }
  }

  /** Calls a transfer tool; resolves only for an `ok` envelope. */
  async call<N extends TransferToolName>(tool: N, args: TransferArgs<N>): Promise<ToolAnswer<N>> {
    let raw: unknown;
    try {
      raw = await this.#mcp.callTool(tool, args);
    } catch (err) {
      throw this.#mapCallError(err, tool);
    }
    const parsed = asEnvelope(raw);
    if (parsed === undefined) {
      throw new CliError(
        'infrastructure',
        `the broker's ${tool} answer was not understood`,
        'check that the CLI and broker versions match',
      );
    }
    if (parsed.status !== 'ok') throw envelopeFailure(parsed, tool);
    return parsed;
  }

  #blobRequest(blobUrl: string, method: 'GET' | 'PUT', headers: Record<string, string>) {
    const url = new URL(blobUrl, this.#env.brokerUrl);
    // Security: the transfer token is only ever sent to the configured broker origin.
    if (url.origin !== this.#env.brokerUrl.origin) {
      throw new CliError(
        'infrastructure',
        'the broker named a blob URL on another origin',
        'report this; do not retry',
      );
    }
    const send = requestFor(url);
    return send(url, {
      method,
      headers: { ...headers, authorization: `Bearer ${this.#env.token}` },
    });
  }

  /** Reads a non-2xx blob answer (bounded) into a failure. */
  async #blobFailure(res: IncomingMessage): Promise<CliError> {
    if (res.statusCode === 401) return authFailure();
    const env = await readEnvelope(res);
    if (env !== undefined) return envelopeFailure(env, 'transfer');
    return new CliError(
      'infrastructure',
      `broker answered HTTP ${res.statusCode ?? 0} to the transfer`,
      'retry later',
    );
  }

  /**
   * A blob GET, read up to the broker's head: 200 gives the size and etag it announced
   * (`x-broker-size`, `ETag`) and the bytes to `save`; with `ifNoneMatch` (the etag of
   * the copy the caller holds), 304 says that copy is current. Anything else fails.
   */
  async download(blobUrl: string, ifNoneMatch?: string): Promise<BlobAnswer> {
    // TE: trailers: the broker then says why it cut a stream (a revoke) in the trailer.
    const req = this.#blobRequest(blobUrl, 'GET', {
      te: 'trailers',
      connection: 'keep-alive, TE',
      ...(ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }),
    });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
      req.end();
    }).catch((err: unknown) => {
      throw unreachable(this.#env, err);
    });
    if (res.statusCode === 304 && ifNoneMatch !== undefined) {
      res.resume();
      if (res.headers.etag === ifNoneMatch) return { unchanged: true, etag: ifNoneMatch };
      throw new CliError(
        'infrastructure',
        'the broker answered "unchanged" without naming the version of the local copy',
        'check that the CLI and broker versions match; nothing was changed locally',
      );
    }
    if (res.statusCode !== 200) throw await this.#blobFailure(res);
    const announced = Number(res.headers[BLOB_TRAILERS.size] ?? Number.NaN);
    const etag = res.headers.etag;
    return {
      unchanged: false,
      size: Number.isSafeInteger(announced) ? announced : null,
      etag: typeof etag === 'string' ? etag : null,
      save: (open) => saveBlob(res, open),
      discard: () => res.destroy(),
    };
  }

  /**
   * Sends `size` bytes to a blob ticket (`send` writes them into the request and ends
   * it); resolves with the broker's answer. A CliError from `send` (the local file
   * changed) cuts the request, so the broker commits nothing, and is the failure.
   * `declare`: the body's sha256 in the BLOB_SHA256_HEADER header (for a ticket issued
   * without it), or `at-end`: `send` writes it after the file's bytes, as 64 hex digits
   * (BLOB_SHA256_AT_END_HEADER).
   */
  async upload(
    blobUrl: string,
    send: (request: ClientRequest) => Promise<void>,
    size: number,
    declare?: { readonly header: string } | 'at-end',
  ): Promise<Envelope> {
    const atEnd = declare === 'at-end';
    const req = this.#blobRequest(blobUrl, 'PUT', {
      'content-type': 'application/octet-stream',
      'content-length': String(size + (atEnd ? SHA256_AT_END_BYTES : 0)),
      ...(atEnd ? { [BLOB_SHA256_AT_END_HEADER]: '1' } : {}),
      ...(declare === undefined || atEnd ? {} : { [BLOB_SHA256_HEADER]: declare.header }),
    });
    const responded = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    // The broker may answer early (a refusal) before reading the whole body; its answer
    // then matters more than the broken pipe that follows.
    const sent = send(req).then(
      () => undefined,
      (err: unknown) => {
        req.destroy();
        return err;
      },
    );
    let res: IncomingMessage;
    try {
      res = await responded;
    } catch (err) {
      const cause = await sent;
      if (cause instanceof CliError) throw cause;
      throw unreachable(this.#env, cause ?? err);
    }
    // An answer before the whole body went (a refusal) ends the upload here: stop sending.
    const stopSending = (): void => {
      if (!req.writableFinished) req.destroy();
    };
    if (res.statusCode === 401) {
      stopSending();
      throw authFailure();
    }
    const env = await readEnvelope(res);
    stopSending();
    if (env === undefined) {
      throw new CliError(
        'infrastructure',
        `broker answered HTTP ${res.statusCode ?? 0} to the upload`,
        'retry later',
      );
    }
    if (env.status !== 'ok') throw envelopeFailure(env, 'upload');
    return env;
  }
}
