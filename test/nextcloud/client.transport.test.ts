/**
 * Transport behaviour the fake cannot provoke, against small purpose-built servers on
 * 127.0.0.1 (real sockets): a download that stalls mid-body, a slow consumer, a
 * connection cut mid-body, and a refusal before the upload body is sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { NextcloudClient, NextcloudError } from '../../broker/nextcloud/index.js';
import { readAll, rejectsWith } from './helpers.js';

const STAT_XML = (size: number) =>
  '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response>' +
  '<d:href>/remote.php/dav/files/u/f.bin</d:href><d:propstat><d:prop><d:resourcetype/>' +
  `<d:getcontentlength>${size}</d:getcontentlength><d:getetag>"e1"</d:getetag></d:prop>` +
  '<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const servers: Server[] = [];
const clients: NextcloudClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(onGet: Handler, size: number, server = createServer()): Promise<string> {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'PROPFIND') {
      req.resume();
      res.writeHead(207, { 'content-type': 'application/xml' });
      res.end(STAT_XML(size));
    } else onGet(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(url: string, timeoutMs: number, chunkSize?: number): NextcloudClient {
  const c = new NextcloudClient(
    { name: 'stub', url, username: 'u', app_password: 'pw-secret-0123456789' },
    { timeoutMs, ...(chunkSize === undefined ? {} : { chunkSize }) },
  );
  clients.push(c);
  return c;
}

describe('download stall attack: a server that stops sending mid-body', () => {
  it('the stream fails with timeout after the idle time', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '1000', etag: '"e1"' });
      res.write(Buffer.alloc(100, 1));
      // ...and nothing more, connection kept open.
    }, 1000);
    const { stream } = await client(url, 200).readStream('f.bin');
    const started = Date.now();
    const err = await readAll(stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NextcloudError);
    expect((err as NextcloudError).code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a slow but steady download is not idle: each chunk re-arms the timer', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '400', etag: '"e1"' });
      let sent = 0;
      const tick = setInterval(() => {
        res.write(Buffer.alloc(10, 2));
        sent += 10;
        if (sent === 400) {
          clearInterval(tick);
          res.end();
        }
      }, 25);
    }, 1000);
    // 40 chunks 25 ms apart take ~1 s, twice the 500 ms idle limit; the gap between
    // chunks leaves a loaded machine 475 ms of slack.
    const { stream } = await client(url, 500).readStream('f.bin');
    const body = await readAll(stream);
    expect(body.length).toBe(400);
  });

  it('a connection cut mid-body fails the stream (unreachable), never a silent short file', async () => {
    const url = await serve((req, res) => {
      res.writeHead(200, { 'content-length': '1000', etag: '"e1"' });
      res.write(Buffer.alloc(100, 1), () => req.socket.destroy());
    }, 1000);
    const { stream } = await client(url, 5000).readStream('f.bin');
    const err = await readAll(stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as NextcloudError).code).toBe('unreachable');
  });

  it('a slow consumer (backpressure) is not idle: no timeout while it pauses', async () => {
    const size = 4 * 1024 * 1024;
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(size), etag: '"e1"' });
      res.end(Buffer.alloc(size, 7));
    }, size);
    const { stream } = await client(url, 150).readStream('f.bin');
    let total = 0;
    for await (const chunk of stream) {
      total += (chunk as Buffer).length;
      if (total === (chunk as Buffer).length) await sleep(400);
    }
    expect(total).toBe(size);
  });

  it('the consumer can abandon the stream; the connection is released', async () => {
    const size = 8 * 1024 * 1024;
    let closed = false;
    const url = await serve((req, res) => {
      res.writeHead(200, { 'content-length': String(size), etag: '"e1"' });
      res.end(Buffer.alloc(size, 7));
      req.socket.on('close', () => {
        closed = true;
      });
    }, size);
    const { stream } = await client(url, 5000).readStream('f.bin');
    for await (const _chunk of stream) break;
    for (let i = 0; i < 50 && !closed; i += 1) await sleep(10);
    expect(closed).toBe(true);
  });
});

describe('upload refused up front (Expect: 100-continue)', () => {
  it('a 412 before 100 Continue costs no upload: the body is barely read', async () => {
    const server = createServer();
    server.on('checkContinue', (req, res) => {
      expect(req.headers['if-none-match']).toBe('*');
      res.writeHead(412, { 'content-type': 'application/xml' });
      res.end(
        '<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns"><s:message>exists</s:message></d:error>',
      );
    });
    const url = await serve(() => undefined, 0, server);
    let pulled = 0;
    const big = new Readable({
      read() {
        pulled += 1;
        this.push(Buffer.alloc(64 * 1024));
        if (pulled === 1024) this.push(null);
      },
    });
    const err = await rejectsWith(
      client(url, 5000, 64 * 1024 * 1024).upload(
        'f.bin',
        big,
        { ifNoneMatch: '*' },
        64 * 1024 * 1024,
      ),
      'precondition_failed',
    );
    expect(err.message).toContain('exists');
    // Only what the stream buffers on its own was read, not 64 MiB.
    expect(pulled).toBeLessThan(64);
  });

  it('a server that never answers 100 Continue still gets the body (fallback)', async () => {
    const server = createServer();
    let received = 0;
    server.on('checkContinue', (req, res) => {
      // Reads without sending 100 Continue, like a proxy that ignores Expect.
      req.on('data', (c: Buffer) => (received += c.length));
      req.on('end', () => {
        res.writeHead(201, { etag: '"new"' });
        res.end();
      });
    });
    const url = await serve(() => undefined, 0, server);
    const result = await client(url, 5000).upload(
      'f.bin',
      Readable.from([Buffer.alloc(1000, 1)]),
      { ifNoneMatch: '*' },
      1000,
    );
    expect(result.etag).toBe('"new"');
    expect(received).toBe(1000);
  });
});

describe("a single PUT's commit check waits for the server to ask for the body", () => {
  it('not while the PUT waits for a free connection, nor on the fallback timer meanwhile', async () => {
    const server = createServer();
    const at = { released: 0, arrived: 0, asked: 0, checked: 0 };
    server.on('checkContinue', (req, res) => {
      at.arrived = performance.now();
      setTimeout(() => {
        at.asked = performance.now();
        res.writeContinue();
        req.resume();
        req.on('end', () => {
          res.writeHead(201, { etag: '"new"' });
          res.end();
        });
      }, 200);
    });
    // Every connection of the pool (16) holds a download that has not finished.
    const held: ServerResponse[] = [];
    const url = await serve(
      (req, res) => {
        req.resume();
        res.writeHead(200, { 'content-length': '2', etag: '"held"' });
        res.write('x');
        held.push(res);
      },
      2,
      server,
    );
    const c = client(url, 5000);
    const downloads = await Promise.all(
      Array.from({ length: 16 }, (_, i) => c.readStream(`held-${i}.bin`)),
    );
    const upload = c.upload(
      'f.bin',
      Readable.from([Buffer.alloc(1000, 1)]),
      { ifNoneMatch: '*' },
      1000,
      {
        beforeCommit: () => {
          at.checked = performance.now();
        },
      },
    );
    // Longer than the 1 s a server that never says 100 Continue is given.
    await sleep(1500);
    at.released = performance.now();
    for (const res of held) res.end('x');
    await Promise.all(downloads.map((d) => readAll(d.stream)));
    expect(await upload).toMatchObject({ etag: '"new"', chunked: false });
    expect(at.arrived).toBeGreaterThan(at.released);
    expect(at.checked).toBeGreaterThanOrEqual(at.asked);
  });
});

describe('one GET: its own answer says whether it carries the file', () => {
  /** A server that records each request and answers GET with `onGet`. */
  async function recording(onGet: Handler, folder = false) {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.headers['if-none-match'] ?? ''}`.trim());
      req.resume();
      if (req.method === 'PROPFIND') {
        res.writeHead(207, { 'content-type': 'application/xml' });
        res.end(
          folder
            ? STAT_XML(0).replace(
                '<d:resourcetype/>',
                '<d:resourcetype><d:collection/></d:resourcetype>',
              )
            : STAT_XML(10),
        );
      } else onGet(req, res);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }
  const banner: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=UTF-8', 'content-length': '6' });
    res.end('<html>');
  };

  it('a file is one request: a GET, no PROPFIND, with the size and etag of its answer', async () => {
    const { url, seen } = await recording((_req, res) => {
      res.writeHead(200, { 'content-length': '5', etag: '"e9"' });
      res.end('hello');
    });
    const got = await client(url, 5000).readStream('f.bin');
    expect({ size: got.size, etag: got.etag }).toEqual({ size: 5, etag: '"e9"' });
    expect((await readAll(got.stream)).toString()).toBe('hello');
    expect(seen).toEqual(['GET']);
  });

  it("a folder's GET (200 text/html without an ETag) is refused as is_folder, never streamed", async () => {
    const { url, seen } = await recording(banner, true);
    const err = await rejectsWith(client(url, 5000).readStream('f.bin'), 'is_folder', false);
    expect(err.message).toContain('is a folder');
    // The stat comes only on this rare path, to word the refusal.
    expect(seen).toEqual(['GET', 'PROPFIND']);
  });

  it('a file answered without an ETag is refused as unverifiable, not streamed', async () => {
    const { url } = await recording(banner);
    const err = await rejectsWith(client(url, 5000).readStream('f.bin'), 'bad_response');
    expect(err.message).toContain('without an ETag');
  });

  it('If-None-Match the held etag: 304 answers unchanged with no stream', async () => {
    const { url, seen } = await recording((req, res) => {
      if (req.headers['if-none-match'] === '"e1"') {
        res.writeHead(304, { etag: '"e1"' });
        res.end();
      } else {
        res.writeHead(200, { 'content-length': '2', etag: '"e2"' });
        res.end('v2');
      }
    });
    const c = client(url, 5000);
    expect(await c.readStream('f.bin', { ifNoneMatch: '"e1"' })).toEqual({
      unchanged: true,
      etag: '"e1"',
    });
    const changed = await c.readStream('f.bin', { ifNoneMatch: '"e0"' });
    expect(changed.unchanged).toBe(false);
    if (!changed.unchanged) expect((await readAll(changed.stream)).toString()).toBe('v2');
    expect(seen).toEqual(['GET "e1"', 'GET "e0"']);
  });

  it('a 304 naming another etag than the one sent (or none) is bad_response', async () => {
    const { url } = await recording((_req, res) => {
      res.writeHead(304, { etag: '"other"' });
      res.end();
    });
    await rejectsWith(
      client(url, 5000).readStream('f.bin', { ifNoneMatch: '"e1"' }),
      'bad_response',
    );
  });

  it('attack: an If-None-Match that is not one quoted etag is refused before any request', async () => {
    const { url, seen } = await recording(banner);
    const c = client(url, 5000);
    for (const bad of [
      '"e1"\r\nX-Injected: 1',
      '"e1"\n',
      `"${'a'.repeat(199)}"`,
      'e1',
      'W/"e1"',
      '*',
      '"a", "b"',
      '""',
      '"caf\u00e9"',
    ]) {
      await rejectsWith(c.readStream('f.bin', { ifNoneMatch: bad }), 'invalid_argument', false);
    }
    expect(seen).toEqual([]);
  });
});

describe('lock race: the file vanishes between the check and the LOCK', () => {
  it('removes the empty file the LOCK created (under its token) and reports not_found', async () => {
    const seen: string[] = [];
    const url = await serve((req, res) => {
      seen.push(`${req.method} ${req.headers['if'] ?? ''}`);
      req.resume();
      if (req.method === 'LOCK') {
        res.writeHead(201, { 'lock-token': '<opaquelocktoken:abc-123>' });
        res.end('<d:prop xmlns:d="DAV:"/>');
      } else {
        res.writeHead(204);
        res.end();
      }
    }, 10);
    await rejectsWith(client(url, 5000).lock('f.bin', 60), 'not_found', false);
    expect(seen).toEqual(['LOCK ', 'DELETE (<opaquelocktoken:abc-123>)']);
  });

  it('takes the token from the lockdiscovery body when the header is missing', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(
        '<d:prop xmlns:d="DAV:"><d:lockdiscovery><d:activelock><d:locktoken>' +
          '<d:href>opaquelocktoken:from-body</d:href></d:locktoken></d:activelock></d:lockdiscovery></d:prop>',
      );
    }, 10);
    expect(await client(url, 5000).lock('f.bin', 60)).toEqual({
      token: 'opaquelocktoken:from-body',
    });
  });

  it('a LOCK answer without a usable token is bad_response', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'lock-token': '<bad token with spaces>' });
      res.end();
    }, 10);
    await rejectsWith(client(url, 5000).lock('f.bin', 60), 'bad_response');
  });
});

describe('a reply that stalls mid-body', () => {
  it('a PROPFIND whose body never completes times out (the deadline covers the body)', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(207, { 'content-type': 'application/xml' });
      res.write('<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">');
      // Keep trickling so the socket is never idle: only a whole-exchange deadline helps.
      const t = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(t));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const started = Date.now();
    await rejectsWith(client(url, 300).list(''), 'timeout', true);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('malformed replies', () => {
  it('a Range request answered with 200 is refused, not served as a range', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.end('0123456789');
    }, 10);
    await rejectsWith(
      client(url, 5000).readStream('f.bin', { range: { start: 2 } }),
      'unexpected_status',
    );
  });

  it('a non-XML PROPFIND reply is bad_response', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(207);
      res.end('<html>proxy login page</html>');
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await rejectsWith(client(url, 5000).list(''), 'bad_response', false);
  });
});
