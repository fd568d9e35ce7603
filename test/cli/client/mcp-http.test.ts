/**
 * The CLI's own MCP client (cli/client/transfer/mcp-http.ts) against the SDK's real
 * Streamable HTTP server (stateless, answering as JSON and as an event stream), and
 * against servers that answer wrongly: each wrong answer must become a named failure,
 * never a hang or a misread result.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
} from '@modelcontextprotocol/sdk/types.js';
import {
  McpCallError,
  McpHttpClient,
  type McpFailure,
} from '../../../cli/client/transfer/mcp-http.js';

const TOKEN = 'Bearer test-transfer-token-0123456789abcdef';
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((done) => {
          s.closeAllConnections();
          s.close(() => done());
        }),
    ),
  );
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/transfer`);
}

/** The SDK's server with the test tools: `echo` answers with structured content. */
function echoServer(): McpServer {
  const server = new McpServer(
    { name: 'test-surface', version: '1' },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    if (request.params.name !== 'echo' && request.params.name !== 'refuse')
      throw new McpError(ErrorCode.InvalidParams, 'no such tool');
    if (request.params.name === 'refuse') {
      // As the broker answers a refusal: the envelope, with isError set.
      const refusal = { status: 'refused', message: 'no grant', code: 'grant_revoked' };
      return {
        content: [{ type: 'text', text: JSON.stringify(refusal) }],
        structuredContent: refusal,
        isError: true,
      };
    }
    const envelope = { status: 'ok', message: 'echoed', args: request.params.arguments };
    return {
      content: [{ type: 'text', text: JSON.stringify(envelope) }],
      structuredContent: envelope,
    };
  });
  return server;
}

/** What the test servers saw of each request: its method and version header. */
interface Seen {
  readonly method: string;
  readonly version: string;
}

/** Reads the JSON-RPC method of a request body, for `seen`; hands the parsed body on. */
async function readRpc(req: IncomingMessage): Promise<{ method: string }> {
  let body = '';
  for await (const chunk of req as AsyncIterable<Buffer>) body += chunk.toString();
  return JSON.parse(body) as { method: string };
}

/** The SDK's server, stateless as the broker runs it: a fresh server per request. */
function sdkSurface(jsonResponse: boolean, seen: Seen[] = []) {
  return listen((req, res) => {
    if (req.headers.authorization !== TOKEN) {
      res.writeHead(401).end();
      return;
    }
    void readRpc(req).then(async (body) => {
      seen.push({
        method: body.method,
        version: String(req.headers['mcp-protocol-version'] ?? '-'),
      });
      const server = echoServer();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: jsonResponse,
      });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    });
  });
}

/** The SDK's server keeping sessions (one server, one transport, a session id). */
async function statefulSdkSurface(seen: Seen[]) {
  const server = echoServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return listen((req, res) => {
    void readRpc(req).then((body) => {
      seen.push({
        method: body.method,
        version: String(req.headers['mcp-protocol-version'] ?? '-'),
      });
      return transport.handleRequest(req, res, body);
    });
  });
}

const client = (url: URL, timeoutMs?: number): McpHttpClient =>
  new McpHttpClient(url, TOKEN, { name: 'broker-cli-test', version: '0' }, timeoutMs);

async function failureOf(call: Promise<unknown>): Promise<McpFailure> {
  const error = await call.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(McpCallError);
  return (error as McpCallError).failure;
}

describe('the CLI MCP client against the SDK server', () => {
  for (const jsonResponse of [true, false]) {
    it(`calls a tool in one POST and reads its structured result (${jsonResponse ? 'JSON' : 'event-stream'} answers)`, async () => {
      const seen: Seen[] = [];
      const url = await sdkSurface(jsonResponse, seen);
      const result = await client(url).callTool('echo', { path: 'a/b.txt', n: 1 });
      expect(result).toEqual({ status: 'ok', message: 'echoed', args: { path: 'a/b.txt', n: 1 } });
      // The stateless surface needs no handshake: the call alone, naming its version.
      expect(seen).toEqual([{ method: 'tools/call', version: '2025-06-18' }]);
    });
  }

  it('falls back to the handshake once when the server keeps sessions, then calls again', async () => {
    const seen: Seen[] = [];
    const url = await statefulSdkSurface(seen);
    const c = client(url);
    expect(await c.callTool('echo', { n: 1 })).toMatchObject({ args: { n: 1 } });
    expect(await c.callTool('echo', { n: 2 })).toMatchObject({ args: { n: 2 } });
    // The first call is refused unread (400), the handshake follows, then one POST per call.
    expect(seen.map((m) => m.method)).toEqual([
      'tools/call',
      'initialize',
      'notifications/initialized',
      'tools/call',
      'tools/call',
    ]);
  });

  it('reads a refusal flagged isError as the envelope it carries (never as a protocol failure)', async () => {
    const url = await sdkSurface(true);
    expect(await client(url).callTool('refuse', {})).toEqual({
      status: 'refused',
      message: 'no grant',
      code: 'grant_revoked',
    });
  });

  it('makes one POST per call and no handshake against the stateless server', async () => {
    const seen: Seen[] = [];
    const url = await sdkSurface(true, seen);
    const c = client(url);
    await c.callTool('echo', { n: 1 });
    await c.callTool('echo', { n: 2 });
    expect(seen.map((m) => m.method)).toEqual(['tools/call', 'tools/call']);
  });

  it('a JSON-RPC error (unknown tool) is a protocol failure carrying its message', async () => {
    const url = await sdkSurface(true);
    const failure = await failureOf(client(url).callTool('nope', {}));
    expect(failure.kind).toBe('protocol');
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/no such tool/);
  });

  it('a wrong token is HTTP 401', async () => {
    const url = await sdkSurface(true);
    const wrong = new McpHttpClient(url, 'Bearer wrong', { name: 'x', version: '0' });
    expect(await failureOf(wrong.callTool('echo', {}))).toEqual({ kind: 'http', status: 401 });
  });
});

/**
 * What a server that keeps sessions does with a request made without the handshake:
 * 400, nothing run (as the SDK's stateful transport answers). True when it answered.
 */
function refusedWithoutSession(req: IncomingMessage, method: string, res: ServerResponse): boolean {
  if (method === 'initialize' || req.headers['mcp-session-id'] !== undefined) return false;
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(
    '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}',
  );
  return true;
}

describe('the CLI MCP client against wrong answers', () => {
  it('a protocol version it does not understand is refused before any tool call', async () => {
    const seen: Rpc[] = [];
    const url = await handshakeThen((_msg, res) => res.writeHead(500).end(), seen, {
      protocolVersion: '1999-01-01',
      sessionId: 'sess-1',
    });
    const failure = await failureOf(client(url).callTool('echo', {}));
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/1999-01-01/);
    expect(seen.map((m) => m.method)).toEqual(['tools/call', 'initialize']);
  });

  it('an answer larger than any control answer is cut off as a protocol failure', async () => {
    const url = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":1,"result":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    });
    const failure = await failureOf(client(url).callTool('echo', {}));
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/longer/);
  });

  it('an answer that is not JSON, or answers another id, is a protocol failure', async () => {
    const notJson = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>proxy error</html>');
    });
    expect((await failureOf(client(notJson).callTool('echo', {}))).kind).toBe('protocol');
    const otherId = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ jsonrpc: '2.0', id: 99, result: { protocolVersion: '2025-06-18' } }),
      );
    });
    const failure = await failureOf(client(otherId).callTool('echo', {}));
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/no reply/);
  });

  it('a server that never answers times out', async () => {
    const url = await listen(() => undefined);
    expect(await failureOf(client(url, 100).callTool('echo', {}))).toEqual({ kind: 'timeout' });
  });

  it('nothing listening is a network failure naming the code', async () => {
    const url = await listen(() => undefined);
    const server = servers.pop();
    await new Promise<void>((done) => server?.close(() => done()));
    expect(await failureOf(client(url).callTool('echo', {}))).toEqual({
      kind: 'network',
      code: 'ECONNREFUSED',
    });
  });

  it('an HTTP error status is reported as such', async () => {
    const url = await listen((_req, res) => res.writeHead(503).end('busy'));
    expect(await failureOf(client(url).callTool('echo', {}))).toEqual({
      kind: 'http',
      status: 503,
    });
  });
});

interface Rpc {
  readonly id?: number;
  readonly method: string;
  readonly headers: IncomingMessage['headers'];
}

/**
 * A server that keeps sessions: it refuses a call made without the handshake, completes
 * the handshake (normally, unless `handshake` says what to answer) and lets `onCall`
 * answer tools/call.
 */
function handshakeThen(
  onCall: (msg: Rpc, res: ServerResponse) => void,
  seen: Rpc[] = [],
  handshake = { protocolVersion: '2025-06-18', sessionId: 'sess-42' },
) {
  return listen((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { id?: number; method: string };
      const msg: Rpc = { ...parsed, headers: req.headers };
      seen.push(msg);
      if (refusedWithoutSession(req, msg.method, res)) return;
      if (msg.method === 'initialize') {
        res.writeHead(200, {
          'content-type': 'application/json',
          'mcp-session-id': handshake.sessionId,
        });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            result: { protocolVersion: handshake.protocolVersion },
          }),
        );
      } else if (msg.id === undefined) res.writeHead(202).end();
      else onCall(msg, res);
    });
  });
}

const reply = (id: number | undefined, result: unknown): string =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { structuredContent: result } });

describe('the CLI MCP client against servers that bend the protocol', () => {
  it('sends the session id the server assigned at initialize on every later request', async () => {
    const seen: Rpc[] = [];
    const url = await handshakeThen((msg, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(reply(msg.id, { status: 'ok' }));
    }, seen);
    await client(url).callTool('echo', {});
    expect(seen.map((m) => [m.method, m.headers['mcp-session-id']])).toEqual([
      ['tools/call', undefined],
      ['initialize', undefined],
      ['notifications/initialized', 'sess-42'],
      ['tools/call', 'sess-42'],
    ]);
  });

  it('a malformed session id is refused before it is sent back in a header', async () => {
    const seen: Rpc[] = [];
    const url = await handshakeThen((_msg, res) => res.writeHead(500).end(), seen, {
      protocolVersion: '2025-06-18',
      sessionId: 'two words',
    });
    const failure = await failureOf(client(url).callTool('echo', {}));
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/session id/);
    expect(seen.map((m) => m.method)).toEqual(['tools/call', 'initialize']);
  });

  it('an event stream kept open after the reply still resolves at once', async () => {
    const url = await handshakeThen((msg, res) => {
      res.writeHead(200, { 'content-type': 'Text/Event-Stream' });
      // A progress notification first (CR-only line ends), then the reply as two data
      // lines whose CRLF is split across writes; the stream is never ended.
      res.write(
        '\uFEFFevent: message\rdata: {"jsonrpc":"2.0","method":"notifications/progress"}\r\r',
      );
      const json = reply(msg.id, { status: 'ok', via: 'sse' });
      const half = json.indexOf('"result"');
      res.write(`data: ${json.slice(0, half)}\r`);
      setTimeout(() => res.write(`\ndata: ${json.slice(half)}\r\n\r\n`), 20);
    });
    const started = Date.now();
    const result = await client(url, 5_000).callTool('echo', {});
    expect(result).toEqual({ status: 'ok', via: 'sse' });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('headers and then silence is a timeout, not an unreachable broker', async () => {
    const url = await handshakeThen((_msg, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0",');
    });
    expect(await failureOf(client(url, 300).callTool('echo', {}))).toEqual({ kind: 'timeout' });
  });

  it('"error": null is a protocol failure, not a crash', async () => {
    const url = await handshakeThen((msg, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: null }));
    });
    const failure = await failureOf(client(url).callTool('echo', {}));
    expect(failure.kind === 'protocol' && failure.detail).toMatch(/JSON-RPC error/);
  });

  it('an error status with an endless body is reported without reading it', async () => {
    const url = await handshakeThen((_msg, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      const more = setInterval(() => res.write('busy '.repeat(1000)), 5);
      res.on('close', () => clearInterval(more));
    });
    const started = Date.now();
    expect(await failureOf(client(url, 5_000).callTool('echo', {}))).toEqual({
      kind: 'http',
      status: 503,
    });
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
