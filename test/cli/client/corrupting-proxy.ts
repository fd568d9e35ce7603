/**
 * An HTTP proxy in front of the broker that flips one byte in blob downloads, as a
 * faulty middlebox or disk cache would; trailers pass through untouched.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform } from 'node:stream';

export async function startCorruptingProxy(
  target: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (up) => {
        const corrupt = req.method === 'GET' && (req.url ?? '').startsWith('/transfer/blobs/');
        res.writeHead(up.statusCode ?? 502, up.headers);
        let flipped = !corrupt;
        const flip = new Transform({
          transform(chunk: Buffer, _e, done) {
            if (!flipped && chunk.length > 0) {
              chunk[0] = (chunk[0] ?? 0) ^ 0xff;
              flipped = true;
            }
            done(null, chunk);
          },
        });
        up.pipe(flip).pipe(res, { end: false });
        flip.on('end', () => {
          res.addTrailers(up.trailers as Record<string, string>);
          res.end();
        });
      },
    );
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
