/**
 * The MCP Streamable HTTP transport for one stateless POST with a JSON answer, written
 * straight to node's request and response.
 *
 * It does what the SDK's StreamableHTTPServerTransport does in this mode (no sessions,
 * `enableJsonResponse`), with the same status codes and messages, but without turning
 * each request into a Web Request and each answer into a Web Response and back (the
 * SDK's hono adapter), which cost more per `list` than the rest of the MCP layer. The
 * body arrives parsed and checked by surfaces/http/body.ts: JSON, bounded, one message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

function answerError(res: ServerResponse, status: number, code: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** One request's transport: created per POST, never reused. */
export class PostTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  #awaited: RequestId | undefined;
  #answered = false;
  #closed = false;
  #settle: (() => void) | undefined;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.#req = req;
    this.#res = res;
    res.once('close', () => void this.close());
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#settle?.();
    this.onclose?.();
  }

  /**
   * Writes the answer to the request this POST carried. Anything else the server sends
   * (a notification, a request to the client) has nowhere to go in a stateless JSON
   * answer and is dropped, as the SDK's transport drops it in this mode.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!('id' in message) || 'method' in message) return;
    if (this.#answered || this.#closed || message.id !== this.#awaited) return;
    this.#answered = true;
    const body = JSON.stringify(message);
    this.#res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    });
    this.#res.end(body);
    this.#settle?.();
  }

  /** Hands the POST's one message to the server; resolves once it is answered. */
  async handle(body: unknown): Promise<void> {
    const res = this.#res;
    const accept = this.#req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      answerError(
        res,
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) {
      answerError(res, 400, -32700, 'Parse error: Invalid JSON-RPC message');
      return;
    }
    const message = parsed.data;
    const request = 'method' in message && 'id' in message;
    const version = this.#req.headers['mcp-protocol-version'];
    if (
      !(request && message.method === 'initialize') &&
      version !== undefined &&
      !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))
    ) {
      answerError(
        res,
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${String(version)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      );
      return;
    }
    const extra = { requestInfo: { headers: this.#req.headers } };
    if (!request) {
      // A notification or a response: nothing to answer but 202.
      this.onmessage?.(message, extra);
      res.writeHead(202).end();
      return;
    }
    this.#awaited = message.id;
    if (this.#closed) return;
    await new Promise<void>((resolve) => {
      this.#settle = resolve;
      this.onmessage?.(message, extra);
    });
  }
}
