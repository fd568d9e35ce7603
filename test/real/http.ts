/**
 * One raw HTTP exchange with a Nextcloud (real or fake): the request target is sent
 * exactly as given (no URL parser normalises `..`, `%2e` or `%2F` on the way), and
 * the whole reply is read.
 */
import { request } from 'node:http';
import type { Account } from './server.js';

export interface RawRequest {
  method: string;
  /** The request target as sent: path and query, already percent-encoded. */
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Basic credentials; undefined sends none. */
  auth?: Account | undefined;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
}

export function basic(account: Account): string {
  return `Basic ${Buffer.from(`${account.user}:${account.password}`).toString('base64')}`;
}

export function send(baseUrl: string, r: RawRequest): Promise<RawResponse> {
  const base = new URL(baseUrl);
  const headers: Record<string, string> = { ...r.headers };
  if (r.auth !== undefined) headers['Authorization'] = basic(r.auth);
  if (r.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(r.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method: r.method,
        path: r.target,
        headers,
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text: body.toString('utf8'),
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${r.method} ${r.target}: no answer in 60 s`)));
    req.on('error', reject);
    req.end(r.body);
  });
}

/** A header's single value (the first, if repeated). */
export function headerOf(res: RawResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}
