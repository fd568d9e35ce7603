/**
 * Where a push declares its file's sha256: in the tool call when the hash must decide
 * first (a recorded file of the same size may be unchanged), else on the blob PUT
 * (`x-broker-sha256`), so the ticket call runs while the file is hashed. A broker that
 * answers no `sha256_header` (one from before it) gets the call again, with the hash. The
 * real CLI through a proxy that records each tool call's arguments and each PUT's header.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { clientEnv, runCli } from '../../support/processes.js';

interface Seen {
  /** The arguments of each tools/call, in order. */
  calls: Record<string, unknown>[];
  /** The x-broker-sha256 header of each blob PUT (null: none). */
  puts: (string | null)[];
}

interface Proxy {
  readonly url: string;
  /** Answer tool calls as a broker without the header would (no sha256_header). */
  old: boolean;
  take(): Seen;
  close(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  let seen: Seen = { calls: [], puts: [] };
  const proxy: Proxy = {
    url: '',
    old: false,
    take() {
      const out = seen;
      seen = { calls: [], puts: [] };
      return out;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rpc =
        req.method === 'POST'
          ? (JSON.parse(body.toString()) as {
              method: string;
              params?: { arguments?: Record<string, unknown> };
            })
          : undefined;
      if (rpc?.method === 'tools/call') seen.calls.push(rpc.params?.arguments ?? {});
      if (req.method === 'PUT') {
        const header = req.headers['x-broker-sha256'];
        seen.puts.push(typeof header === 'string' ? header : null);
      }
      const out = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method },
        (up) => {
          const reply: Buffer[] = [];
          up.on('data', (c: Buffer) => reply.push(c));
          up.on('end', () => {
            let text = Buffer.concat(reply).toString();
            if (proxy.old && rpc?.method === 'tools/call') {
              const answer = JSON.parse(text) as {
                result: { structuredContent?: Record<string, unknown> };
              };
              delete answer.result.structuredContent?.['sha256_header'];
              text = JSON.stringify(answer);
            }
            const headers = { ...up.headers };
            delete headers['content-length'];
            delete headers['transfer-encoding'];
            res.writeHead(up.statusCode ?? 502, headers);
            res.addTrailers(up.trailers as Record<string, string>);
            res.end(text);
          });
        },
      );
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined && name !== 'connection') out.setHeader(name, value);
      }
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  });
}

let broker: Broker;
let proxy: Proxy;
beforeAll(async () => {
  broker = await startBroker();
  proxy = await startProxy(broker.url);
  await broker.fake.mkdir('Decl');
  await broker.grant([{ path: 'Decl', mode: 'write' }]);
});
afterAll(async () => {
  await proxy.close();
  await broker.close();
});
beforeEach(() => {
  proxy.old = false;
  proxy.take();
});

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A local file and a staging folder of its own. */
function localFile(content: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'broker-declared-'));
  const file = join(dir, 'f.txt');
  writeFileSync(file, content);
  return { dir, file };
}

describe('a push declares the sha256 where it costs no waiting', () => {
  it('a new file: the write call goes without it, the PUT declares it', async () => {
    const { dir, file } = localFile('new and never recorded');
    const run = await runCli(['push', 'personal:Decl/new.txt', file], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.calls[0]).toMatchObject({ size: 'new and never recorded'.length });
    expect(seen.puts).toEqual([sha256('new and never recorded')]);
    const intent = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'intent')
      .at(-1);
    expect(intent).toMatchObject({ declared_sha256: sha256('new and never recorded') });
  });

  it('a recorded file of the same size: the hash comes first, in the call', async () => {
    const { dir, file } = localFile('version one');
    const env = clientEnv(proxy.url, dir);
    expect((await runCli(['push', 'personal:Decl/same.txt', file], env)).code).toBe(ExitCode.ok);
    writeFileSync(file, 'version two');
    proxy.take();
    const run = await runCli(['push', 'personal:Decl/same.txt', file], env);
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toEqual([expect.objectContaining({ sha256: sha256('version two') })]);
    expect(seen.puts).toEqual([null]);
  });

  it('a broker that answers no sha256_header: the call again, with the hash', async () => {
    proxy.old = true;
    const { dir, file } = localFile('for an older broker');
    const run = await runCli(['push', 'personal:Decl/old.txt', file], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(2);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.calls[1]).toMatchObject({ sha256: sha256('for an older broker') });
    expect(seen.puts).toEqual([null]);
  });
});
