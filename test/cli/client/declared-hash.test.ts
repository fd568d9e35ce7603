/**
 * Where a push declares its file's sha256, and when it hashes: a file that may be the
 * copy last recorded (its stamp is the recorded one, or an older record of its size) is
 * hashed first and declared in the tool call; any other (new, or edited since: its stamp
 * differs) makes the call at once and declares the hash after the file's bytes at the
 * PUT's end (`x-broker-sha256-at-end`), hashing while it sends. A broker whose ticket
 * names no `sha256_at_end` gets it on the PUT's header (`x-broker-sha256`), one that
 * names neither the call again, with the hash. The real CLI through a proxy that records
 * each tool call's arguments and each PUT's declarations.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { recordName } from '../../../cli/client/transfer/state.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli } from '../../../support/processes.js';

interface Seen {
  /** The arguments of each tools/call, in order. */
  calls: Record<string, unknown>[];
  /** Each blob PUT's declaration: its x-broker-sha256 header, or the digits at its end. */
  puts: { header: string | null; atEnd: string | null }[];
}

interface Proxy {
  readonly url: string;
  /** Answer tool calls as an older broker would: without sha256_at_end, or without both. */
  old: 'no-at-end' | 'no-header' | undefined;
  take(): Seen;
  close(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  let seen: Seen = { calls: [], puts: [] };
  const proxy: Proxy = {
    url: '',
    old: undefined,
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
        const atEnd = req.headers['x-broker-sha256-at-end'] === '1';
        seen.puts.push({
          header: typeof header === 'string' ? header : null,
          atEnd: atEnd ? body.subarray(-64).toString('latin1') : null,
        });
      }
      const out = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method },
        (up) => {
          const reply: Buffer[] = [];
          up.on('data', (c: Buffer) => reply.push(c));
          up.on('end', () => {
            let text = Buffer.concat(reply).toString();
            if (proxy.old !== undefined && rpc?.method === 'tools/call') {
              const answer = JSON.parse(text) as {
                result: { structuredContent?: Record<string, unknown> };
              };
              delete answer.result.structuredContent?.['sha256_at_end'];
              if (proxy.old === 'no-header')
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
  proxy.old = undefined;
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

/** The CLI's record of `path` (in the state folder beside the staging folder `dir`). */
const recordFile = (dir: string, path: string): string =>
  join(`${dir}.state`, recordName('personal', path));

describe('a push declares the sha256 where it costs no waiting', () => {
  it('a new file: the write call goes without it, the hash follows the bytes of the PUT', async () => {
    const { dir, file } = localFile('new and never recorded');
    const run = await runCli(['push', 'personal:Decl/new.txt', file], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.calls[0]).toMatchObject({ size: 'new and never recorded'.length });
    expect(seen.puts).toEqual([{ header: null, atEnd: sha256('new and never recorded') }]);
    const intent = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'intent')
      .at(-1);
    expect(intent).toMatchObject({ declared_at_end: true });
    expect((await broker.fake.readFile('Decl/new.txt'))?.toString()).toBe('new and never recorded');
  });

  it('an edited file (its stamp differs from the record): the call at once, the hash at the end', async () => {
    const { dir, file } = localFile('version one');
    const env = clientEnv(proxy.url, dir);
    expect((await runCli(['push', 'personal:Decl/same.txt', file], env)).code).toBe(ExitCode.ok);
    writeFileSync(file, 'version two');
    proxy.take();
    const run = await runCli(['push', 'personal:Decl/same.txt', file], env);
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.calls[0]).toHaveProperty('if_match');
    expect(seen.puts).toEqual([{ header: null, atEnd: sha256('version two') }]);
  });

  it('a record from before stamps, at the file size: the hash comes first, in the call', async () => {
    const { dir, file } = localFile('version one');
    const env = clientEnv(proxy.url, dir);
    expect((await runCli(['push', 'personal:Decl/old.txt', file], env)).code).toBe(ExitCode.ok);
    const record = JSON.parse(readFileSync(recordFile(dir, 'Decl/old.txt'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(record).toHaveProperty('stamp');
    delete record.stamp;
    writeFileSync(recordFile(dir, 'Decl/old.txt'), JSON.stringify(record));
    writeFileSync(file, 'version two');
    proxy.take();
    const run = await runCli(['push', 'personal:Decl/old.txt', file], env);
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toEqual([expect.objectContaining({ sha256: sha256('version two') })]);
    expect(seen.puts).toEqual([{ header: null, atEnd: null }]);
  });

  it('a file touched but not edited (its stamp differs, its bytes do not): unchanged, nothing written', async () => {
    const { dir, file } = localFile('the same bytes');
    const env = clientEnv(proxy.url, dir);
    expect((await runCli(['push', 'personal:Decl/touched.txt', file], env)).code).toBe(ExitCode.ok);
    const versions = broker.fake.requests.filter((r) => r.method === 'PUT').length;
    writeFileSync(file, 'the same bytes');
    proxy.take();
    const run = await runCli(['push', 'personal:Decl/touched.txt', file], env);
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json).toMatchObject({ status: 'unchanged', sha256: sha256('the same bytes') });
    // No byte reached Nextcloud: nothing was committed, no new version.
    expect(broker.fake.requests.filter((r) => r.method === 'PUT').length).toBe(versions);
    expect(proxy.take().puts.every((p) => p.atEnd === null)).toBe(true);
  });

  it('a broker that answers no sha256_at_end: the hash first, on the PUT header', async () => {
    proxy.old = 'no-at-end';
    const { dir, file } = localFile('for an older broker');
    const run = await runCli(['push', 'personal:Decl/older.txt', file], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.puts).toEqual([{ header: sha256('for an older broker'), atEnd: null }]);
  });

  it('a broker that answers neither: the call again, with the hash', async () => {
    proxy.old = 'no-header';
    const { dir, file } = localFile('for an even older broker');
    const run = await runCli(['push', 'personal:Decl/oldest.txt', file], clientEnv(proxy.url, dir));
    expect(run.code).toBe(ExitCode.ok);
    const seen = proxy.take();
    expect(seen.calls).toHaveLength(2);
    expect(seen.calls[0]).not.toHaveProperty('sha256');
    expect(seen.calls[1]).toMatchObject({ sha256: sha256('for an even older broker') });
    expect(seen.puts).toEqual([{ header: null, atEnd: null }]);
  });
});
