/**
 * The direct baseline: a plain node HTTP client (keep-alive) speaking WebDAV to the
 * fake Nextcloud, with the same PROPFIND body and Basic credentials the broker's
 * client sends, reading every answer to its end.
 */
import { Agent, request } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { PROPFIND_BODY } from '../../broker/nextcloud/multistatus.js';

export interface Dav {
  /** PROPFIND Depth 1 of a folder; resolves with the body size once fully read. */
  propfind(path: string): Promise<number>;
  /** GET a file as a stream (fails the stream on a non-200 answer). */
  getStream(path: string): Readable;
  /** PUT a stream as a file. */
  put(path: string, body: Readable, size: number): Promise<number>;
  close(): void;
}

export function davClient(base: string, user: string, password: string, maxSockets = 64): Dav {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const url = (path: string): URL =>
    new URL(
      `${base}/remote.php/dav/files/${encodeURIComponent(user)}/${path
        .split('/')
        .map(encodeURIComponent)
        .join('/')}`,
    );
  const send = (
    method: string,
    path: string,
    headers: Record<string, string | number>,
    body: string | Readable | undefined,
    onData: (chunk: Buffer) => void,
    ok: number[],
  ): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(url(path), {
        method,
        agent,
        headers: { authorization: auth, ...headers },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          onData(c);
        });
        res.on('error', reject);
        res.on('end', () =>
          ok.includes(res.statusCode ?? 0)
            ? resolve(bytes)
            : reject(new Error(`${method} ${path}: HTTP ${res.statusCode}`)),
        );
      });
      if (body === undefined || typeof body === 'string') req.end(body);
      else body.pipe(req);
    });
  return {
    propfind: (path) =>
      send(
        'PROPFIND',
        path,
        { depth: '1', 'content-type': 'application/xml; charset=utf-8' },
        PROPFIND_BODY,
        () => undefined,
        [207],
      ),
    getStream: (path) => {
      const out = new PassThrough();
      const req = request(url(path), { method: 'GET', agent, headers: { authorization: auth } });
      req.on('error', (e) => out.destroy(e));
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          out.destroy(new Error(`GET ${path}: HTTP ${res.statusCode}`));
          return;
        }
        res.on('error', (e) => out.destroy(e));
        res.pipe(out);
      });
      req.end();
      return out;
    },
    put: (path, body, size) =>
      send(
        'PUT',
        path,
        { 'content-length': size, 'content-type': 'application/octet-stream' },
        body,
        () => undefined,
        [201, 204],
      ),
    close: () => agent.destroy(),
  };
}
