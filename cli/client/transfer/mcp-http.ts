/**
 * The CLI's MCP client for the transfer surface: Streamable HTTP (MCP 2025-06-18), each
 * request a POST answered with one JSON-RPC message (as `application/json`, or as a
 * `text/event-stream`, both of which the spec lets a server choose).
 *
 * One POST per tool call: the broker's transfer surface is stateless (a fresh server per
 * request, no session), so it answers a `tools/call` that carries MCP-Protocol-Version
 * without a preceding `initialize` (docs/transfer-protocol.md). The lifecycle's handshake
 * (initialize, notifications/initialized) would add two round trips to every command for
 * nothing the CLI uses. A server that does keep sessions refuses such a call with HTTP
 * 400 before running it; the client then makes the handshake and calls again.
 *
 * Why not the SDK's Client: loading it and the schemas it pulls in took ~130 ms of a
 * ~280 ms `broker fetch` of a small file, for three requests to one known server. An
 * agent stages files one command at a time, so that start-up is paid per file.
 */
import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { CodedError } from '../../../broker/base/coded-error.js';
import { requestFor } from './http-request.js';
import { isObject } from './json.js';
import type { JsonObject } from '../../../broker/base/protocol.js';

/** The version this client asks for; the broker's SDK server speaks it. */
export const MCP_PROTOCOL_VERSION = '2025-06-18';
/** Versions whose tools/call this client understands (the answer shape is the same). */
const UNDERSTOOD_VERSIONS: ReadonlySet<string> = new Set([
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
]);
/** A control answer is one short JSON message; anything longer is not one. */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** No control call takes this long (the SDK client's default request timeout). */
const REQUEST_TIMEOUT_MS = 60_000;

/** Why a call failed, for the caller to map onto exit codes. */
export type McpFailure =
  | { readonly kind: 'http'; readonly status: number }
  | { readonly kind: 'network'; readonly code: string | undefined }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'protocol'; readonly detail: string };

/** The code is the failure's kind; `failure` keeps what goes with it (a status, a detail). */
export class McpCallError extends CodedError<McpFailure['kind']> {
  override readonly name = 'McpCallError';
  constructor(readonly failure: McpFailure) {
    super(
      failure.kind,
      failure.kind === 'http'
        ? `HTTP ${failure.status}`
        : failure.kind === 'protocol'
          ? failure.detail
          : failure.kind,
    );
  }
}

interface JsonRpcAnswer {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: unknown;
}

const protocolError = (detail: string): McpCallError =>
  new McpCallError({ kind: 'protocol', detail });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw protocolError('the answer was not JSON');
  }
}

/** The reply to `id` among parsed JSON-RPC messages (one, or a batch). */
function replyIn(value: unknown, id: number): JsonRpcAnswer | undefined {
  const messages = Array.isArray(value) ? (value as unknown[]) : [value];
  return messages.find((m): m is JsonRpcAnswer => isObject(m) && m.id === id);
}

/** The data of one server-sent event: its `data:` lines joined by newlines. */
function eventData(event: string): string {
  return event
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
    .join('\n');
}

/**
 * Reads the reply to request `id`: from one JSON body, or from server-sent events as
 * they arrive, stopping at the reply (a server may keep an event stream open after it).
 * At most MAX_ANSWER_BYTES are read.
 */
async function readReply(res: IncomingMessage, id: number): Promise<JsonRpcAnswer | undefined> {
  const contentType = String(res.headers['content-type'] ?? '').toLowerCase();
  const eventStream = contentType.startsWith('text/event-stream');
  const decoder = new StringDecoder('utf8');
  let text = '';
  let heldCr = false;
  let total = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > MAX_ANSWER_BYTES) {
      res.destroy();
      throw protocolError('the answer was longer than any control answer can be');
    }
    const decoded = decoder.write(chunk);
    if (!eventStream) {
      text += decoded;
      continue;
    }
    // Event streams end lines with CRLF, LF or CR; a CR at the end of a chunk may be the
    // first half of a CRLF, so it waits for the next chunk.
    let incoming: string = (heldCr ? '\r' : '') + decoded;
    heldCr = incoming.endsWith('\r');
    if (heldCr) incoming = incoming.slice(0, -1);
    text += incoming.replace(/\r\n?/g, '\n');
    if (total === chunk.length) text = text.replace(/^\uFEFF/, '');
    for (let cut = text.indexOf('\n\n'); cut !== -1; cut = text.indexOf('\n\n')) {
      const data = eventData(text.slice(0, cut));
      text = text.slice(cut + 2);
      const reply = data === '' ? undefined : replyIn(parseJson(data), id);
      if (reply !== undefined) {
        res.destroy();
        return reply;
      }
    }
  }
  // An event stream that ends without the reply has none (an unfinished event is
  // discarded, as the event-stream format says).
  return eventStream ? undefined : replyIn(parseJson(text + decoder.end()), id);
}

/**
 * The session a server assigned at initialize (MCP 2025-06-18: visible ASCII), to send
 * back on every later request; the broker runs stateless and assigns none.
 */
function sessionIdOf(res: IncomingMessage): string | undefined {
  const id = res.headers['mcp-session-id'];
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || !/^[\x21-\x7e]{1,256}$/.test(id))
    throw protocolError('the session id the broker assigned is malformed');
  return id;
}

export class McpHttpClient {
  #protocolVersion: string | undefined;
  #sessionId: string | undefined;
  /** Set once the server refused a call made without the handshake. */
  #needsHandshake = false;
  #nextId = 1;

  /** `endpoint` is the surface's URL; `authorization` goes with every request. */
  readonly #endpoint: URL;
  readonly #authorization: string;
  readonly #clientInfo: { readonly name: string; readonly version: string };
  readonly #timeoutMs: number;

  constructor(
    endpoint: URL,
    authorization: string,
    clientInfo: { readonly name: string; readonly version: string },
    timeoutMs = REQUEST_TIMEOUT_MS,
  ) {
    this.#timeoutMs = timeoutMs;
    this.#endpoint = endpoint;
    this.#authorization = authorization;
    this.#clientInfo = clientInfo;
  }

  /** One POST; resolves with the reply to `id` (undefined for a notification). */
  async #post(message: {
    readonly id?: number;
    readonly method: string;
    readonly params?: JsonObject;
  }): Promise<JsonRpcAnswer | undefined> {
    const send = requestFor(this.#endpoint);
    const signal = AbortSignal.timeout(this.#timeoutMs);
    const req = send(this.#endpoint, {
      method: 'POST',
      signal,
      headers: {
        authorization: this.#authorization,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        // Every request after initialize names its version: the negotiated one, or, for a
        // call made without the handshake, the one this client speaks.
        ...(message.method === 'initialize'
          ? {}
          : { 'mcp-protocol-version': this.#protocolVersion ?? MCP_PROTOCOL_VERSION }),
        ...(this.#sessionId === undefined ? {} : { 'mcp-session-id': this.#sessionId }),
      },
    });
    // A timeout is a timeout whether it cut the request, the wait or the body.
    const failed = (err: unknown): McpCallError => {
      if (err instanceof McpCallError) return err;
      if (signal.aborted) return new McpCallError({ kind: 'timeout' });
      return new McpCallError({ kind: 'network', code: (err as { code?: string }).code });
    };
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        req.on('response', resolve);
        req.on('error', reject);
        req.end(JSON.stringify({ jsonrpc: '2.0', ...message }));
      });
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        // The body of a failure is not read: it may be long, or never end.
        res.destroy();
        throw new McpCallError({ kind: 'http', status });
      }
      if (message.method === 'initialize') this.#sessionId = sessionIdOf(res);
      if (message.id === undefined) {
        res.destroy();
        return undefined;
      }
      const answer = await readReply(res, message.id);
      if (answer === undefined) throw protocolError('the answer carried no reply to the request');
      if (answer.error !== undefined) {
        const text =
          isObject(answer.error) && typeof answer.error.message === 'string'
            ? answer.error.message
            : 'an error';
        throw protocolError(`the broker answered with a JSON-RPC error: ${text.slice(0, 300)}`);
      }
      return answer;
    } catch (err) {
      throw failed(err);
    }
  }

  async #request(method: string, params: JsonObject): Promise<unknown> {
    const id = this.#nextId;
    this.#nextId += 1;
    const answer = await this.#post({ id, method, params });
    return answer?.result;
  }

  /** The MCP handshake: initialize, check the version, notifications/initialized. */
  async #initialize(): Promise<void> {
    if (this.#protocolVersion !== undefined) return;
    const result = await this.#request('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: this.#clientInfo,
    });
    const version = isObject(result) ? result.protocolVersion : undefined;
    if (typeof version !== 'string' || !UNDERSTOOD_VERSIONS.has(version)) {
      throw protocolError(
        `the broker speaks MCP ${typeof version === 'string' ? version.slice(0, 40) : '(no version)'}, which this CLI does not`,
      );
    }
    this.#protocolVersion = version;
    await this.#post({ method: 'notifications/initialized' });
  }

  /**
   * Calls a tool; resolves with its structured result (or the JSON of its first text
   * content, for a server that sends no structured content).
   */
  async callTool(name: string, args: JsonObject): Promise<unknown> {
    const params = { name, arguments: args };
    if (this.#protocolVersion === undefined && !this.#needsHandshake) {
      try {
        return toolResult(await this.#request('tools/call', params));
      } catch (err) {
        // A server that keeps sessions answers a call without one with 400 (the SDK's
        // "Server not initialized", "Mcp-Session-Id header is required"): the request
        // was refused before anything ran, so it is made again after the handshake.
        const refusedUnread =
          err instanceof McpCallError && err.failure.kind === 'http' && err.failure.status === 400;
        if (!refusedUnread) throw err;
        this.#needsHandshake = true;
      }
    }
    await this.#initialize();
    return toolResult(await this.#request('tools/call', params));
  }
}

/** A tools/call result's structured content (or the JSON of its first text content). */
function toolResult(result: unknown): unknown {
  if (!isObject(result)) throw protocolError('the tool answer had no result');
  if (result.structuredContent !== undefined) return result.structuredContent;
  const first: unknown = Array.isArray(result.content) ? result.content[0] : undefined;
  if (isObject(first) && typeof first.text === 'string') {
    try {
      return JSON.parse(first.text) as unknown;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
