/**
 * The fixed cost of a command in requests: the CLI makes one POST per tool call (the
 * transfer surface is stateless and needs no MCP handshake, docs/transfer-protocol.md)
 * and moves the bytes on the same connection. A broker that began to require the
 * handshake, or a CLI that made it again, would add two round trips to every command:
 * this is where that shows. The real CLI (the agent's file) through a recording proxy.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli } from '../../../support/processes.js';

interface Recorder {
  readonly url: string;
  /** `METHOD path` (the JSON-RPC method for a POST) of every request since the last take. */
  take(): { requests: string[]; connections: number };
  close(): Promise<void>;
}

/** A proxy in front of the broker that records each request and each client connection. */
async function startRecorder(target: string): Promise<Recorder> {
  const upstream = new URL(target);
  let requests: string[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = (req.url ?? '').replace(/\/transfer\/blobs\/[^/?]+/, '/transfer/blobs/…');
      const method =
        req.method === 'POST' ? (JSON.parse(body.toString()) as { method: string }).method : '';
      requests.push(`${req.method} ${path}${method === '' ? '' : ` ${method}`}`);
      const out = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res, { end: false });
          up.on('end', () => {
            res.addTrailers(up.trailers as Record<string, string>);
            res.end();
          });
        },
      );
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined && name !== 'connection') out.setHeader(name, value);
      }
      out.end(body);
    });
  });
  server.on('connection', () => (connections += 1));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    take() {
      const seen = { requests, connections };
      requests = [];
      connections = 0;
      return seen;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let broker: Broker;
let proxy: Recorder;
beforeAll(async () => {
  broker = await startBroker();
  proxy = await startRecorder(broker.url);
});
afterAll(async () => {
  await proxy.close();
  await broker.close();
});

const stage = (): string => mkdtempSync(join(tmpdir(), 'broker-round-trips-'));

describe('one POST per tool call, one connection per command', () => {
  it('fetch: the read call and the download', async () => {
    await broker.fake.writeFile('Trips/a.txt', 'one kilobyte, nearly');
    await broker.grant([{ path: 'Trips', mode: 'write' }]);
    proxy.take();
    const run = await runCli(['fetch', 'personal:Trips/a.txt'], clientEnv(proxy.url, stage()));
    expect(run.code).toBe(ExitCode.ok);
    expect(proxy.take()).toEqual({
      requests: ['POST /transfer tools/call', 'GET /transfer/blobs/…'],
      connections: 1,
    });
  });

  it('push: the write call and the upload', async () => {
    const dir = stage();
    const src = join(dir, 'up.txt');
    writeFileSync(src, 'pushed');
    proxy.take();
    const run = await runCli(['push', 'personal:Trips/up.txt', src], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    expect(proxy.take()).toEqual({
      requests: ['POST /transfer tools/call', 'PUT /transfer/blobs/…'],
      connections: 1,
    });
  });
});
