/**
 * Talks to the broker's transfer surface: MCP tool calls on `POST /transfer`, and
 * byte streams on `/transfer/blobs/<ticket>` (see docs/transfer-protocol.md).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ExitCode } from '../command.js';
import { CliError } from './errors.js';
import { isObject, optionalString, parseJson } from './json.js';
import type { ClientEnv } from './env.js';
import { BROKER_VERSION } from '../../broker/base/version.js';
import { McpCallError, McpHttpClient } from './mcp-http.js';

/** A result envelope (docs/contracts.md §5), as much of it as the CLI reads. */
export interface Envelope {
  readonly status: 'ok' | 'refused' | 'error' | 'pending';
  readonly message: string;
  readonly code?: string;
  readonly retry?: boolean;
  readonly hint?: string;
  readonly [field: string]: unknown;
}

const STATUSES: ReadonlySet<unknown> = new Set(['ok', 'refused', 'error', 'pending']);

/**
 * `value` as an envelope, or undefined when it is not one: a known status, and the fields
 * the CLI reads of the types it reads them as (a missing message is ''). Other fields
 * pass through for the command to read (a ticket's blob_url, size, etag).
 */
export function asEnvelope(value: unknown): Envelope | undefined {
  if (!isObject(value) || !STATUSES.has(value.status)) return undefined;
  const { message, code, retry, hint } = value;
  if (!optionalString(message) || !optionalString(code) || !optionalString(hint)) return undefined;
  if (retry !== undefined && typeof retry !== 'boolean') return undefined;
  return { ...value, message: message ?? '' } as Envelope;
}

/**
 * Refusals that a grant would change: the next step is to request access. By prefix, so
 * every grant code (`grant_ended`, `grant_revoked`, `grant_expired`, any later one) is one.
 */
const needsAccess = (code: string | undefined): boolean =>
  code === undefined ||
  code === 'no_grant' ||
  code === 'unknown_instance' ||
  code.startsWith('grant_');

/** Envelope codes that mean "this would overwrite something": exit 5. */
const CLOBBER_CODES = new Set([
  'conflict',
  'precondition_failed',
  'exists',
  'destination_exists',
  'changed',
]);

interface FailureRule {
  readonly matches: (env: Envelope) => boolean;
  readonly exitCode: ExitCode;
  readonly prefix: string;
  readonly nextStep: (env: Envelope) => string;
}

/** Any other failure: infrastructure (exit 2), with the broker's retry advice. */
const INFRASTRUCTURE_RULE: FailureRule = {
  matches: () => true,
  exitCode: ExitCode.infrastructure,
  prefix: '',
  nextStep: (e) => (e.retry === false ? 'do not retry; see the message' : 'retry later'),
};

/** How a non-ok envelope maps to the exit codes (docs/contracts.md §6); the first rule wins. */
const FAILURE_RULES: readonly FailureRule[] = [
  {
    matches: (e) => e.status === 'refused' && e.code !== undefined && CLOBBER_CODES.has(e.code),
    exitCode: ExitCode.clobber,
    prefix: 'clobber refused: ',
    nextStep: () => 'fetch the current version, merge your change, then push again',
  },
  {
    matches: (e) => e.code === 'verification_failed',
    exitCode: ExitCode.verification,
    prefix: 'verification failed: ',
    nextStep: () => 'treat the remote copy as corrupt: fetch it to inspect, then try again',
  },
  {
    // The broker could not record the operation: an infrastructure failure, not a verdict.
    matches: (e) => e.code === 'audit_unavailable',
    exitCode: ExitCode.infrastructure,
    prefix: '',
    nextStep: () => 'retry later; the broker owner must fix its audit log',
  },
  {
    // Every refusal, whatever its code: the wall or a grant said no (exit 3, never 2).
    matches: (e) => e.status === 'refused' || e.status === 'pending',
    exitCode: ExitCode.refused,
    prefix: 'refused: ',
    nextStep: (e) =>
      needsAccess(e.code)
        ? 'ask for access with request_access (and wait for the owner); do not retry as is'
        : 'change what the message names; do not retry as is',
  },
];

/** Turns a non-ok envelope into the CLI failure with the contract's exit code. */
export function envelopeFailure(env: Envelope, what: string): CliError {
  const detail = env.message !== '' ? env.message : `${what} failed`;
  const rule = FAILURE_RULES.find((r) => r.matches(env)) ?? INFRASTRUCTURE_RULE;
  return new CliError(
    rule.exitCode,
    `${rule.prefix}${detail}`,
    env.hint ?? rule.nextStep(env),
    env.code === undefined ? {} : { code: env.code },
  );
}

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

/** The trailer that says why the broker cut a download (docs/transfer-protocol.md). */
export const ENVELOPE_TRAILER = 'x-broker-envelope';

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

/** The blob URL of a ticket answer; its absence means the CLI and broker disagree. */
export function blobUrlOf(ticket: Record<string, unknown>): string {
  if (typeof ticket.blob_url === 'string') return ticket.blob_url;
  throw new CliError(
    ExitCode.infrastructure,
    'the broker gave no blob URL',
    'check that the CLI and broker versions match',
  );
}

function unreachable(env: ClientEnv, cause: unknown): CliError {
  const code =
    (cause as { cause?: { code?: string } }).cause?.code ?? (cause as { code?: string }).code;
  return new CliError(
    ExitCode.infrastructure,
    `broker unreachable at ${env.brokerUrl.origin}${code !== undefined ? ` (${code})` : ''}`,
    'check BROKER_URL and that `broker serve` is running; retry later',
  );
}

function authFailure(): CliError {
  return new CliError(
    ExitCode.usage,
    'the broker rejected BROKER_TRANSFER_TOKEN (401)',
    'set BROKER_TRANSFER_TOKEN to tokens.transfer from the broker config (not the agent token)',
  );
}

export class TransferClient {
  private readonly mcp: McpHttpClient;

  constructor(private readonly env: ClientEnv) {
    this.mcp = new McpHttpClient(new URL('/transfer', env.brokerUrl), `Bearer ${env.token}`, {
      name: 'broker-cli',
      version: BROKER_VERSION,
    });
  }

  private mapCallError(err: unknown, tool: string): CliError {
    if (!(err instanceof McpCallError)) return unreachable(this.env, err);
    const { failure } = err;
    switch (failure.kind) {
      case 'http':
        if (failure.status === 401) return authFailure();
        return new CliError(
          ExitCode.infrastructure,
          `broker answered HTTP ${failure.status}`,
          'retry later; see the broker log',
        );
      case 'network':
        return unreachable(this.env, failure);
      case 'timeout':
        return new CliError(
          ExitCode.infrastructure,
          `the broker did not answer within a minute (calling ${tool})`,
          'retry later; see the broker log',
        );
      case 'protocol':
        return new CliError(
          ExitCode.infrastructure,
          `the broker's ${tool} answer was not understood: ${failure.detail}`,
          'check that the CLI and broker versions match',
        );
    }
  }

  /** Calls a transfer tool; resolves only for an `ok` envelope. */
  async call(tool: string, args: Record<string, unknown>): Promise<Envelope> {
    let raw: unknown;
    try {
      raw = await this.mcp.callTool(tool, args);
    } catch (err) {
      throw this.mapCallError(err, tool);
    }
    const parsed = asEnvelope(raw);
    if (parsed === undefined) {
      throw new CliError(
        ExitCode.infrastructure,
        `the broker's ${tool} answer was not understood`,
        'check that the CLI and broker versions match',
      );
    }
    if (parsed.status !== 'ok') throw envelopeFailure(parsed, tool);
    return parsed;
  }

  private blobRequest(blobUrl: string, method: 'GET' | 'PUT', headers: Record<string, string>) {
    const url = new URL(blobUrl, this.env.brokerUrl);
    // Security: the transfer token is only ever sent to the configured broker origin.
    if (url.origin !== this.env.brokerUrl.origin) {
      throw new CliError(
        ExitCode.infrastructure,
        'the broker named a blob URL on another origin',
        'report this; do not retry',
      );
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return send(url, {
      method,
      headers: { ...headers, authorization: `Bearer ${this.env.token}` },
    });
  }

  /** Reads a non-2xx blob answer (bounded) into a failure. */
  private async blobFailure(res: IncomingMessage): Promise<CliError> {
    if (res.statusCode === 401) return authFailure();
    const env = await readEnvelope(res);
    if (env !== undefined) return envelopeFailure(env, 'transfer');
    return new CliError(
      ExitCode.infrastructure,
      `broker answered HTTP ${res.statusCode ?? 0} to the transfer`,
      'retry later',
    );
  }

  /**
   * Streams a blob into the writable `open` gives once the broker has answered 200 (so
   * nothing is created locally for a refusal). Resolves with what the broker says it
   * streamed (the `x-broker-sha256` / `x-broker-size` trailers), for the caller to
   * compare; a stream the broker cut ends with the `x-broker-envelope` trailer instead,
   * which becomes its failure (a revoke: exit 3 with the code).
   */
  async download(
    blobUrl: string,
    open: () => Promise<Writable>,
  ): Promise<{ sha256: string; size: number; etag: string | null }> {
    // TE: trailers: the broker then says why it cut a stream (a revoke) in the trailer.
    const req = this.blobRequest(blobUrl, 'GET', { te: 'trailers', connection: 'keep-alive, TE' });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
      req.end();
    }).catch((err: unknown) => {
      throw unreachable(this.env, err);
    });
    if (res.statusCode !== 200) throw await this.blobFailure(res);
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
        ExitCode.infrastructure,
        'the connection to the broker dropped during the transfer',
        'retry later; nothing was staged',
      );
    }
    const cut = trailerEnvelope(res.trailers[ENVELOPE_TRAILER]);
    if (cut !== undefined) throw envelopeFailure(cut, 'transfer');
    const sha256 = res.trailers['x-broker-sha256'];
    const size = Number(res.trailers['x-broker-size']);
    if (
      typeof sha256 !== 'string' ||
      !/^[0-9a-f]{64}$/.test(sha256) ||
      !Number.isSafeInteger(size)
    ) {
      throw new CliError(
        ExitCode.infrastructure,
        'the transfer ended without the broker confirming it (no checksum trailer)',
        'retry; nothing was staged',
      );
    }
    const etag = res.headers.etag;
    return { sha256, size, etag: typeof etag === 'string' ? etag : null };
  }

  /** Streams `source` (exactly `size` bytes) to a blob ticket; resolves with the broker's answer. */
  async upload(blobUrl: string, source: Readable, size: number): Promise<Envelope> {
    const req = this.blobRequest(blobUrl, 'PUT', {
      'content-type': 'application/octet-stream',
      'content-length': String(size),
    });
    const responded = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    // The broker may answer early (a refusal) before reading the whole body; its answer
    // then matters more than the broken pipe that follows.
    const sent = pipeline(source, req).then(
      () => undefined,
      (err: unknown) => err,
    );
    let res: IncomingMessage;
    try {
      res = await responded;
    } catch (err) {
      throw unreachable(this.env, (await sent) ?? err);
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
        ExitCode.infrastructure,
        `broker answered HTTP ${res.statusCode ?? 0} to the upload`,
        'retry later',
      );
    }
    if (env.status !== 'ok') throw envelopeFailure(env, 'upload');
    return env;
  }
}
