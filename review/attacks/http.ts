/**
 * Attacks on the HTTP layer of the real daemon (support/daemon.ts startBroker):
 * Host header tricks, token tricks, body tricks, method and path tricks, and the blob
 * endpoint spoken to the way an odd client would. Requests go out byte-exact over a
 * socket where Node's client would normalise them.
 */
import { gzipSync } from 'node:zlib';
import { startBroker, type Broker } from '../../support/daemon.js';
import type { Envelope } from '../../broker/base/envelope.js';
import { asciiVerdict, auditVerdict } from '../lib/audit-check.js';
import { rawExchange, requestText, type RawAnswer } from '../../support/raw-http.js';
import type { Case, Group } from '../runner.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const JSON_HEADERS = [
  'Content-Type: application/json',
  'Accept: application/json, text/event-stream',
];
const agentAuth = `Authorization: Bearer ${AGENT_TOKEN}`;
const transferAuth = `Authorization: Bearer ${TRANSFER_TOKEN}`;
const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

const toolCall = (name: string, args: unknown, id: unknown = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** 400/403 (refused before anything ran) or the status that was answered instead. */
const refusedOr = (a: RawAnswer): string =>
  a.status === 400 || a.status === 403 ? 'refused' : `served ${a.status}`;

/** The envelope inside a tools/call answer, or the JSON-RPC error code. */
function toolOutcome(a: RawAnswer): string {
  try {
    const body = JSON.parse(a.body) as {
      result?: { structuredContent?: Envelope };
      error?: { code: number };
    };
    if (body.error !== undefined) return `rpc error ${body.error.code}`;
    const env = body.result?.structuredContent;
    return env === undefined ? `HTTP ${a.status}` : `${env.status} ${env.code ?? ''}`.trim();
  } catch {
    return `HTTP ${a.status}`;
  }
}

interface Ctx {
  broker: Broker;
  port: number;
}

function send(ctx: Ctx, start: string, headers: readonly string[], body = ''): Promise<RawAnswer> {
  return rawExchange(ctx.port, requestText(start, headers, body));
}

const mcp = (ctx: Ctx, body: string, extra: readonly string[] = [], path = '/mcp') =>
  send(
    ctx,
    `POST ${path} HTTP/1.1`,
    ['Host: localhost', ...JSON_HEADERS, agentAuth, ...extra],
    body,
  );

async function healthy(ctx: Ctx): Promise<boolean> {
  return (await send(ctx, 'GET /health HTTP/1.1', ['Host: localhost'])).status === 200;
}

/** A fresh read ticket on a granted file. */
async function readTicket(ctx: Ctx, path: string): Promise<string> {
  const transfer = await ctx.broker.transfer();
  const answer = await call(transfer, 'read', { instance: 'personal', path });
  if (answer.status !== 'ok') throw new Error(`read: ${answer.message}`);
  return answer.blob_url as string;
}

function hostCases(ctx: Ctx): Case[] {
  const withHost = (hosts: string[], start = 'POST /mcp HTTP/1.1') =>
    send(ctx, start, [...hosts.map((h) => `Host: ${h}`), ...JSON_HEADERS, agentAuth], PING);
  return [
    {
      name: 'absolute-form target http://evil.example/mcp with Host: localhost (RFC 9112 §3.2.2: the target names the host)',
      expect: 'refused',
      finding: 'F2',
      run: async () =>
        refusedOr(await withHost(['localhost'], 'POST http://evil.example/mcp HTTP/1.1')),
    },
    {
      name: 'absolute-form target http://localhost/mcp with Host: evil.example',
      expect: 'refused',
      run: async () =>
        refusedOr(await withHost(['evil.example'], 'POST http://localhost/mcp HTTP/1.1')),
    },
    {
      name: 'two Host headers, allowed one first (RFC 9112 §3.2: must be 400)',
      expect: 'refused',
      finding: 'F3',
      run: async () => refusedOr(await withHost(['localhost', 'evil.example'])),
    },
    {
      name: 'two Host headers, foreign one first',
      expect: 'refused',
      run: async () => refusedOr(await withHost(['evil.example', 'localhost'])),
    },
    {
      name: 'Host "127.1" (shorthand that resolves to 127.0.0.1)',
      expect: 'refused',
      run: async () => refusedOr(await withHost(['127.1'])),
    },
    {
      name: 'Host "[::ffff:127.0.0.1]" (IPv4-mapped IPv6)',
      expect: 'refused',
      run: async () => refusedOr(await withHost(['[::ffff:127.0.0.1]'])),
    },
    {
      name: 'Host "evil.example@localhost" (userinfo) and "127.0.0.1." (trailing dot on an IP)',
      expect: 'refused/refused',
      run: async () =>
        `${refusedOr(await withHost(['evil.example@localhost']))}/${refusedOr(await withHost(['127.0.0.1.']))}`,
    },
    {
      name: 'Host "LOCALHOST:1" (upper case, a port we do not listen on): allowed by design',
      expect: 'served 200',
      run: async () => refusedOr(await withHost(['LOCALHOST:1'])),
    },
    {
      name: 'Origin: null (a sandboxed iframe) with an allowed Host',
      expect: 'refused',
      run: async () => refusedOr(await mcp(ctx, PING, ['Origin: null'])),
    },
    {
      name: 'HTTP/1.0 request without any Host',
      expect: 'refused',
      run: async () =>
        refusedOr(await send(ctx, 'POST /mcp HTTP/1.0', [...JSON_HEADERS, agentAuth], PING)),
    },
  ];
}

/** Three requests pipelined on one kept-alive connection; the statuses in order. */
async function pipelined(ctx: Ctx): Promise<string> {
  const one = (path: string, headers: string[], last = false): string =>
    [
      `POST ${path} HTTP/1.1`,
      ...headers,
      ...JSON_HEADERS,
      `Content-Length: ${Buffer.byteLength(PING)}`,
      ...(last ? ['Connection: close'] : []),
      '',
      PING,
    ].join('\r\n');
  const text =
    one('/transfer', ['Host: localhost', transferAuth]) +
    one('/mcp', ['Host: localhost']) +
    one('/mcp', ['Host: evil.example', agentAuth], true);
  const answer = await rawExchange(ctx.port, text);
  const all = `${answer.head}\r\n\r\n${answer.body}`;
  return [...all.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]).join('/');
}

function tokenCases(ctx: Ctx): Case[] {
  const withAuth = async (auth: string[], path = '/mcp') =>
    String(
      (
        await send(
          ctx,
          `POST ${path} HTTP/1.1`,
          ['Host: localhost', ...JSON_HEADERS, ...auth],
          PING,
        )
      ).status,
    );
  const basic = Buffer.from(`x:${AGENT_TOKEN}`).toString('base64');
  return [
    {
      name: 'scheme in lower case "bearer <token>" (RFC 9110: case-insensitive)',
      expect: '200',
      run: () => withAuth([`Authorization: bearer ${AGENT_TOKEN}`]),
    },
    {
      name: '"Bearer  <token>" with two spaces (strict parse, fails closed)',
      expect: '401',
      run: () => withAuth([`Authorization: Bearer  ${AGENT_TOKEN}`]),
    },
    {
      name: 'token + ", Bearer x" (a credential list)',
      expect: '401',
      run: () => withAuth([`Authorization: Bearer ${AGENT_TOKEN}, Bearer x`]),
    },
    {
      name: 'two Authorization headers, a wrong one first',
      expect: '401',
      run: () => withAuth(['Authorization: Bearer nope', agentAuth]),
    },
    {
      name: 'the token as a Basic password',
      expect: '401',
      run: () => withAuth([`Authorization: Basic ${basic}`]),
    },
    {
      name: 'the token in a Cookie header',
      expect: '401',
      run: () => withAuth([`Cookie: token=${AGENT_TOKEN}; access_token=${AGENT_TOKEN}`]),
    },
    {
      name: 'the transfer token on "/MCP" (routes match case-insensitively)',
      expect: '401',
      run: () => withAuth([transferAuth], '/MCP'),
    },
    {
      name: 'the agent token on "/Transfer/" and on "/TRANSFER/BLOBS/<43 chars>"',
      expect: '401/401',
      run: async () => {
        const a = await withAuth([agentAuth], '/Transfer/');
        const b = await send(ctx, `GET /TRANSFER/BLOBS/${'A'.repeat(43)} HTTP/1.1`, [
          'Host: localhost',
          agentAuth,
        ]);
        return `${a}/${b.status}`;
      },
    },
    {
      name: 'pipelined on one connection: a good transfer call, then /mcp with no token, then a foreign Host',
      expect: '200/401/403',
      run: () => pipelined(ctx),
    },
    {
      name: 'the agent token on "/mcp/../transfer" (no normalisation into the other surface)',
      expect: '404',
      run: () => withAuth([agentAuth], '/mcp/../transfer'),
    },
  ];
}

function bodyCases(ctx: Ctx): Case[] {
  const status = async (p: Promise<RawAnswer>) => String((await p).status);
  const bomb = gzipSync(
    Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ping',
        params: { pad: 'x'.repeat(2_000_000) },
      }),
    ),
  );
  return [
    {
      name: `gzip bomb: 2 MB of JSON in a ${bomb.length}-byte gzip body`,
      expect: '413',
      run: async () => {
        const head = [
          'POST /mcp HTTP/1.1',
          'Host: localhost',
          ...JSON_HEADERS,
          agentAuth,
          'Content-Encoding: gzip',
          `Content-Length: ${bomb.length}`,
          'Connection: close',
          '',
          '',
        ].join('\r\n');
        return String(
          (await rawExchange(ctx.port, Buffer.concat([Buffer.from(head), bomb]))).status,
        );
      },
    },
    {
      // (zstd was the probe on Node 20; from Node 22.15 on the body parser decodes it, so
      // a plain body labelled zstd is a 400. LZW `compress` no runtime decodes.)
      name: 'Content-Encoding: compress (unsupported)',
      expect: '415',
      run: () => status(mcp(ctx, PING, ['Content-Encoding: compress'])),
    },
    {
      name: 'Content-Type: application/json; charset=latin1',
      expect: '415',
      run: () =>
        status(
          send(
            ctx,
            'POST /mcp HTTP/1.1',
            [
              'Host: localhost',
              'Content-Type: application/json; charset=latin1',
              'Accept: application/json, text/event-stream',
              agentAuth,
            ],
            PING,
          ),
        ),
    },
    {
      name: 'Content-Type: application/json-rpc, and no Content-Type at all',
      expect: '415/415',
      run: async () => {
        const a = await send(
          ctx,
          'POST /mcp HTTP/1.1',
          [
            'Host: localhost',
            'Content-Type: application/json-rpc',
            'Accept: application/json, text/event-stream',
            agentAuth,
          ],
          PING,
        );
        const b = await send(
          ctx,
          'POST /mcp HTTP/1.1',
          ['Host: localhost', 'Accept: application/json, text/event-stream', agentAuth],
          PING,
        );
        return `${a.status}/${b.status}`;
      },
    },
    {
      name: 'a batch of one message, an empty batch, a bare number',
      expect: '400/400/400',
      run: async () =>
        [await mcp(ctx, `[${PING}]`), await mcp(ctx, '[]'), await mcp(ctx, '1')]
          .map((a) => a.status)
          .join('/'),
    },
    {
      name: '30 000-deep nested arrays in params (inside the body limit): answered, daemon alive',
      expect: 'answered, alive',
      run: async () => {
        const deep = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":${'['.repeat(30_000)}${']'.repeat(30_000)}}}`;
        const a = await mcp(ctx, deep);
        return `${a.status > 0 && a.status < 500 ? 'answered' : `HTTP ${a.status}`}, ${(await healthy(ctx)) ? 'alive' : 'down'}`;
      },
    },
    {
      name: '"__proto__" in tool arguments: Object.prototype untouched, nothing read from it',
      expect: 'no effect',
      run: async () => {
        const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_access","arguments":{"__proto__":{"instance":"personal","path":"Zed","mode":"read"}}}}`;
        const a = await send(
          ctx,
          'POST /transfer HTTP/1.1',
          ['Host: localhost', ...JSON_HEADERS, transferAuth],
          body,
        );
        const polluted = Object.hasOwn(Object.prototype, 'instance') || 'path' in {};
        const outcome = toolOutcome(a);
        return !polluted && outcome === 'refused invalid_arguments'
          ? 'no effect'
          : `${outcome}${polluted ? ', polluted' : ''}`;
      },
    },
    {
      name: '"constructor": {"prototype": …} in tool arguments',
      expect: 'refused invalid_arguments',
      run: async () =>
        toolOutcome(
          await mcp(
            ctx,
            toolCall('list', {
              instance: 'personal',
              path: 'a',
              constructor: { prototype: { polluted: 1 } },
            }),
          ),
        ),
    },
    {
      name: 'a lone surrogate escape "\\ud800" in a JSON path',
      expect: 'refused invalid_path',
      run: async () =>
        toolOutcome(
          await mcp(
            ctx,
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list","arguments":{"instance":"personal","path":"a\\ud800b"}}}',
          ),
        ),
    },
    {
      name: 'JSON-RPC ids {} [] true 1.5 1e400 2^53+1 are rejected; "s" and 7 are echoed',
      expect: '400 ×6, echoed ×2',
      run: async () => {
        const bad = ['{"a":1}', '[1]', 'true', '1.5', '1e400', '9007199254740993'];
        const statuses = await Promise.all(
          bad.map((id) => mcp(ctx, `{"jsonrpc":"2.0","id":${id},"method":"ping"}`)),
        );
        const rejected = statuses.filter((a) => a.status === 400).length;
        const echoed = await Promise.all(
          ['"s"', '7'].map((id) => mcp(ctx, `{"jsonrpc":"2.0","id":${id},"method":"ping"}`)),
        );
        const ok = echoed.filter(
          (a, i) => a.status === 200 && JSON.parse(a.body).id === JSON.parse(['"s"', '7'][i] ?? ''),
        ).length;
        return `400 ×${rejected}, echoed ×${ok}`;
      },
    },
    {
      name: 'methods "__proto__" and "toString"',
      expect: 'rpc error -32601/rpc error -32601',
      run: async () =>
        [
          toolOutcome(await mcp(ctx, '{"jsonrpc":"2.0","id":1,"method":"__proto__"}')),
          toolOutcome(await mcp(ctx, '{"jsonrpc":"2.0","id":1,"method":"toString"}')),
        ].join('/'),
    },
    {
      name: 'tool names "__proto__", "constructor", "hasOwnProperty", and "read" on the agent surface',
      expect: 'unknown ×4',
      run: async () => {
        const names = ['__proto__', 'constructor', 'hasOwnProperty', 'read'];
        const out = await Promise.all(names.map((n) => mcp(ctx, toolCall(n, {}))));
        return `unknown ×${out.filter((a) => toolOutcome(a) === 'rpc error -32602').length}`;
      },
    },
  ];
}

function pathCases(ctx: Ctx): Case[] {
  const status = async (path: string, auth = agentAuth) =>
    String(
      (await send(ctx, `POST ${path} HTTP/1.1`, ['Host: localhost', ...JSON_HEADERS, auth], PING))
        .status,
    );
  return [
    {
      name: '"/MCP" with the agent token: same surface, same token',
      expect: '200',
      run: () => status('/MCP'),
    },
    { name: '"/mcp/" with the agent token', expect: '200', run: () => status('/mcp/') },
    { name: '"//mcp"', expect: '404', run: () => status('//mcp') },
    { name: '"/mcp;x"', expect: '404', run: () => status('/mcp;x') },
    { name: '"/%6dcp" (an escaped route name)', expect: '404', run: () => status('/%6dcp') },
    {
      name: 'GET /transfer/blobs/..%2f..%2fmcp with the transfer token',
      expect: '404 ticket_invalid',
      run: async () => {
        const a = await send(ctx, 'GET /transfer/blobs/..%2f..%2fmcp HTTP/1.1', [
          'Host: localhost',
          transferAuth,
        ]);
        return `${a.status} ${(JSON.parse(a.body) as Envelope).code ?? ''}`;
      },
    },
    {
      name: 'paths with U+202E, U+2028, NEL, a C1 CSI and DEL: refused, and the audit log stays printable ASCII',
      expect: 'refused invalid_path x5, printable ASCII',
      run: async () => {
        const outcomes = new Set<string>();
        for (const path of [
          'Docs2/\u202Efdp.txt',
          'a\u2028b',
          'a\u0085b',
          'a\u009B2Jb',
          'a\u007Fb',
        ]) {
          outcomes.add(
            toolOutcome(await mcp(ctx, toolCall('list', { instance: 'personal', path }))),
          );
        }
        return `${[...outcomes].join(', ')} x5, ${asciiVerdict(ctx.broker.dir)}`;
      },
    },
    {
      name: 'a wall-valid CJK path whose URL would pass 4 000 bytes: refused, Nextcloud never asked',
      expect: 'refused invalid_path, 0 requests',
      run: async () => {
        const top = '\u6F22'.repeat(70);
        await ctx.broker.grant([{ path: top, mode: 'read' }]);
        const before = ctx.broker.fake.requests.length;
        const a = await mcp(
          ctx,
          toolCall('list', { instance: 'personal', path: Array(7).fill(top).join('/') }),
        );
        return `${toolOutcome(a)}, ${ctx.broker.fake.requests.length - before} requests`;
      },
    },
  ];
}

function blobCases(ctx: Ctx): Case[] {
  return [
    {
      name: 'HEAD on a fresh read ticket: 405, ticket still usable, Nextcloud not asked',
      expect: '405, ticket intact, 0 requests',
      finding: 'F4',
      run: async () => {
        await ctx.broker.fake.writeFile('Blob/head.txt', 'hello');
        const url = await readTicket(ctx, 'Blob/head.txt');
        const before = ctx.broker.fake.requests.length;
        const head = await send(ctx, `HEAD ${url} HTTP/1.1`, ['Host: localhost', transferAuth]);
        const asked = ctx.broker.fake.requests.length - before;
        const get = await send(ctx, `GET ${url} HTTP/1.1`, ['Host: localhost', transferAuth]);
        return `${head.status}, ticket ${get.status === 200 ? 'intact' : `burned (${get.status})`}, ${asked} requests`;
      },
    },
    {
      name: 'an HTTP/1.0 client GETs a fresh read ticket (no chunked encoding, so no trailers)',
      expect: 'streamed 200',
      finding: 'F4',
      run: async () => {
        await ctx.broker.fake.writeFile('Blob/old-client.txt', 'hello');
        const url = await readTicket(ctx, 'Blob/old-client.txt');
        const a = await send(ctx, `GET ${url} HTTP/1.0`, ['Host: localhost', transferAuth]);
        return a.status === 200 && a.body.includes('hello') ? 'streamed 200' : `HTTP ${a.status}`;
      },
    },
    {
      name: 'PUT with Content-Length and Transfer-Encoding, "+5", then chunked: refused, ticket survives all three',
      expect: '400/400/400, then stored',
      run: async () => {
        await ctx.broker.fake.writeFile('BlobPut/seed.txt', '');
        await ctx.broker.grant([{ path: 'BlobPut', mode: 'write' }]);
        const transfer = await ctx.broker.transfer();
        const w = await call(transfer, 'write', {
          instance: 'personal',
          path: 'BlobPut/x.txt',
          size: 5,
          if_none_match: '*',
        });
        const url = w.blob_url as string;
        const put = (headers: string, body: string) =>
          rawExchange(
            ctx.port,
            `PUT ${url} HTTP/1.1\r\nHost: localhost\r\n${transferAuth}\r\n${headers}Connection: close\r\n\r\n${body}`,
          );
        const a = await put(
          'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n',
          '5\r\nhello\r\n0\r\n\r\n',
        );
        const b = await put('Content-Length: +5\r\n', 'hello');
        const c = await put('Transfer-Encoding: chunked\r\n', '5\r\nhello\r\n0\r\n\r\n');
        const d = await put('Content-Length: 5\r\n', 'hello');
        const stored = (await ctx.broker.fake.readFile('BlobPut/x.txt'))?.toString();
        return `${a.status}/${b.status}/${c.status}, then ${d.status === 200 && stored === 'hello' ? 'stored' : `HTTP ${d.status} ${d.body.slice(0, 120)}`}`;
      },
    },
  ];
}

export const httpGroup: Group = {
  title: 'attacks: the HTTP layer of the real daemon (Host, tokens, bodies, paths, blobs)',
  async build() {
    const broker = await startBroker({ maxBodyBytes: 64 * 1024 });
    const ctx: Ctx = { broker, port: Number(new URL(broker.url).port) };
    await broker.grant([{ path: 'Blob', mode: 'read' }]);
    return {
      cases: [
        ...hostCases(ctx),
        ...tokenCases(ctx),
        ...bodyCases(ctx),
        ...pathCases(ctx),
        ...blobCases(ctx),
        {
          name: 'after every attack above: the audit chain verifies, each intent has one outcome',
          expect: 'intact',
          run: async () => {
            await new Promise((r) => setTimeout(r, 100));
            const v = auditVerdict(broker.dir, broker.auditLines());
            const ascii = asciiVerdict(broker.dir);
            if (ascii !== 'printable ASCII') return ascii;
            return v.startsWith('verifies') ? 'intact' : v;
          },
        },
      ],
      teardown: () => broker.close(),
    };
  },
};
