/**
 * Raw HTTP for the transfer surface's blob endpoint (`/transfer/blobs/<ticket>`), as
 * the CLI speaks it: GET streams bytes (size and sha256 trailers), PUT streams a body
 * with a Content-Length and answers a JSON envelope.
 */
import { request } from 'node:http';

export interface BlobAnswer {
  status: number;
  body: Buffer;
  trailers: Record<string, string | undefined>;
  /** The response ended normally (false when the broker cut the stream). */
  complete: boolean;
  /** Set when the connection was cut before any answer (status 0). */
  cut?: string;
}

export function getBlob(base: string, blobUrl: string, token: string): Promise<BlobAnswer> {
  return new Promise((resolve) => {
    const req = request(
      new URL(blobUrl, base),
      { headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        const done = (): void =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks),
            trailers: res.trailers,
            complete: res.complete,
          });
        res.on('end', done);
        // A stream cut by the broker (grant revoked) ends in an error, not 'end'.
        res.on('error', done);
      },
    );
    // A connection the broker cut before answering (the grant ended) is an answer too.
    req.on('error', (e: NodeJS.ErrnoException) =>
      resolve({
        status: 0,
        body: Buffer.alloc(0),
        trailers: {},
        complete: false,
        cut: e.code ?? e.message,
      }),
    );
    req.end();
  });
}

export function putBlob(
  base: string,
  blobUrl: string,
  token: string,
  body: Buffer,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve) => {
    const req = request(
      new URL(blobUrl, base),
      {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/octet-stream',
          'content-length': String(body.length),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          } catch {
            json = { unparsed: Buffer.concat(chunks).toString('utf8').slice(0, 200) };
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
        res.on('error', (e: NodeJS.ErrnoException) =>
          resolve({ status: res.statusCode ?? 0, json: { cut: e.code ?? e.message } }),
        );
      },
    );
    // The broker may refuse and close before reading the body, or cut the upload when
    // the grant ends: status 0, and the reason in `cut`.
    req.on('error', (e: NodeJS.ErrnoException) =>
      resolve({ status: 0, json: { cut: e.code ?? e.message } }),
    );
    req.end(body);
  });
}
