/**
 * The CLI's MCP client for the transfer surface: Streamable HTTP (MCP 2025-06-18), the
 * `initialize` handshake, then `tools/call`, each a POST answered with one JSON-RPC
 * message (as `application/json`, or as a `text/event-stream`, both of which the spec
 * lets a server choose).
 *
 * Why not the SDK's Client: loading it and the schemas it pulls in took ~130 ms of a
 * ~280 ms `broker fetch` of a small file, for three requests to one known server. An
 * agent stages files one command at a time, so that start-up is paid per file.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

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

export class McpCallError extends Error {
  constructor(readonly failure: McpFailure) {
    super(
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
  readonly error?: { readonly code?: unknown; readonly message?: unknown };
}

const protocolError = (detail: string): McpCallError =>
  new McpCallError({ kind: 'protocol', detail });

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads a body of at most MAX_ANSWER_BYTES; longer is a protocol error. */
async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > MAX_ANSWER_BYTES) {
      res.destroy();
      throw protocolError('the answer was longer than any control answer can be');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON-RPC messages of a body: one JSON value, or the `data` of each SSE event. */
function messagesOf(body: string, contentType: string): unknown[] {
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw protocolError('the answer was not JSON');
    }
  };
  if (!contentType.startsWith('text/event-stream')) {
    const value = parse(body);
    return Array.isArray(value) ? value : [value];
  }
  // Server-sent events: events are separated by a blank line; an event's data is its
  // `data:` lines joined by newlines (HTML living standard, "event stream").
  return body
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map(parse);
}

export class McpHttpClient {
  #protocolVersion: string | undefined;
  #nextId = 1;

  /** `endpoint` is the surface's URL; `authorization` goes with every request. */
  constructor(
    private readonly endpoint: URL,
    private readonly authorization: string,
    private readonly clientInfo: { readonly name: string; readonly version: string },
    private readonly timeoutMs = REQUEST_TIMEOUT_MS,
  ) {}

  /** One POST; resolves with the answer for `id` (undefined for a notification). */
  private async post(message: Record<string, unknown>): Promise<JsonRpcAnswer | undefined> {
    const send = this.endpoint.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(this.endpoint, {
      method: 'POST',
      signal: AbortSignal.timeout(this.timeoutMs),
      headers: {
        authorization: this.authorization,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(this.#protocolVersion === undefined
          ? {}
          : { 'mcp-protocol-version': this.#protocolVersion }),
      },
    });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', ...message }));
    }).catch((err: unknown) => {
      const error = err as { name?: string; code?: string };
      throw new McpCallError(
        error.name === 'AbortError' || error.code === 'ABORT_ERR'
          ? { kind: 'timeout' }
          : { kind: 'network', code: error.code },
      );
    });
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) {
      res.resume();
      throw new McpCallError({ kind: 'http', status });
    }
    if (message.id === undefined) {
      res.resume();
      return undefined;
    }
    const body = await readBody(res);
    const answer = messagesOf(body, String(res.headers['content-type'] ?? '')).find(
      (m): m is JsonRpcAnswer => isObject(m) && m.id === message.id,
    );
    if (answer === undefined) throw protocolError('the answer carried no reply to the request');
    if (answer.error !== undefined) {
      const text = typeof answer.error.message === 'string' ? answer.error.message : 'an error';
      throw protocolError(`the broker answered with a JSON-RPC error: ${text.slice(0, 300)}`);
    }
    return answer;
  }

  private async request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.#nextId;
    this.#nextId += 1;
    const answer = await this.post({ id, method, params });
    return answer?.result;
  }

  /** The MCP handshake: initialize, check the version, notifications/initialized. */
  private async initialize(): Promise<void> {
    if (this.#protocolVersion !== undefined) return;
    const result = await this.request('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: this.clientInfo,
    });
    const version = isObject(result) ? result.protocolVersion : undefined;
    if (typeof version !== 'string' || !UNDERSTOOD_VERSIONS.has(version)) {
      throw protocolError(
        `the broker speaks MCP ${typeof version === 'string' ? version.slice(0, 40) : '(no version)'}, which this CLI does not`,
      );
    }
    this.#protocolVersion = version;
    await this.post({ method: 'notifications/initialized' });
  }

  /**
   * Calls a tool; resolves with its structured result (or the JSON of its first text
   * content, for a server that sends no structured content).
   */
  async callTool(name: string, args: Record<string, unknown>): Promise<unknown> {
    await this.initialize();
    const result = await this.request('tools/call', { name, arguments: args });
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
}
