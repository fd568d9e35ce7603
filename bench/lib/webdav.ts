/**
 * The direct baseline of the list benchmark: a plain node HTTP client (keep-alive)
 * sending the same PROPFIND (body, Depth 1, Basic credentials) the broker's client
 * sends, straight to the fake Nextcloud, and reading every answer to its end.
 */
import { Agent, request } from 'node:http';
import { PROPFIND_BODY } from '../../broker/nextcloud/multistatus.js';

export interface Dav {
  /** PROPFIND Depth 1 of a folder; resolves with the body size once fully read. */
  propfind(path: string): Promise<number>;
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
  return {
    propfind: (path) =>
      new Promise((resolve, reject) => {
        const req = request(url(path), {
          method: 'PROPFIND',
          agent,
          headers: {
            authorization: auth,
            depth: '1',
            'content-type': 'application/xml; charset=utf-8',
          },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('error', reject);
          res.on('end', () =>
            res.statusCode === 207
              ? resolve(bytes)
              : reject(new Error(`PROPFIND ${path}: HTTP ${res.statusCode}`)),
          );
        });
        req.end(PROPFIND_BODY);
      }),
    close: () => agent.destroy(),
  };
}
