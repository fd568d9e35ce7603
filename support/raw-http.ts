/**
 * HTTP below the MCP client, for the HTTP-layer tests and attacks: a plain POST, a
 * node:http request with any Host header and method, and byte-exact requests over a
 * socket for what Node's HTTP client will not send (duplicate Host headers,
 * absolute-form targets, HTTP/1.0, conflicting framing).
 */
import { request } from 'node:http';
import { connect } from 'node:net';

/** An MCP `initialize` request body. */
export const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'attack', version: '1' },
  },
});

/** A JSON POST with the MCP Accept header, for attacks the MCP client would never send. */
export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** A node:http request (any Host header, any method, the path sent as given). */
export function raw(
  url: string,
  opts: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    setHost?: boolean;
    /** Let raw bytes through in the path that Node's client would refuse. */
    insecureHTTPParser?: boolean;
  },
): Promise<{
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers: opts.headers ?? {},
        setHost: opts.setHost ?? true,
        insecureHTTPParser: opts.insecureHTTPParser ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface RawAnswer {
  /** 0 when the server closed without answering. */
  readonly status: number;
  /** Every byte of the reply, one character per byte. */
  readonly reply: string;
  readonly head: string;
  readonly body: string;
}

/**
 * Sends `text` as is to `target` (a URL, or a port on 127.0.0.1) and reads until the
 * server closes: send `Connection: close`, or HTTP/1.0. Writes without half-closing.
 */
export function rawExchange(
  target: string | number,
  text: string | Buffer,
  timeoutMs = 5_000,
): Promise<RawAnswer> {
  const { host, port } =
    typeof target === 'number'
      ? { host: '127.0.0.1', port: target }
      : { host: new URL(target).hostname, port: Number(new URL(target).port) };
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, host, () => socket.write(text));
    const finish = (): void => {
      clearTimeout(timer);
      const bytes = Buffer.concat(chunks);
      const all = bytes.toString('utf8');
      const split = all.indexOf('\r\n\r\n');
      const head = split < 0 ? all : all.slice(0, split);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({
        status,
        reply: bytes.toString('latin1'),
        head,
        body: split < 0 ? '' : all.slice(split + 4),
      });
    };
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
}

/** A request text with the given start line, header lines and body (Content-Length added). */
export function requestText(startLine: string, headers: readonly string[], body = ''): string {
  const length = body === '' ? [] : [`Content-Length: ${Buffer.byteLength(body)}`];
  return [startLine, ...headers, ...length, 'Connection: close', '', body].join('\r\n');
}
