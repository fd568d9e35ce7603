/**
 * `broker mcp`'s protocol handling in process (cli/client/mcp/server.ts): lines in, lines out,
 * no broker. What the SDK's client would never send (bad JSON, oversized lines, odd
 * ids), version negotiation, and the progress notifier's pacing on an injected clock.
 * test/cli/client/mcp-stdio.test.ts drives the real process with the SDK's client.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { progressNotifier } from '../../../cli/client/mcp/progress.js';
import { serveMcp } from '../../../cli/client/mcp/server.js';

let stderr = '';

/** Sends `lines` to a server, ends its input, and resolves with every message it sent. */
async function exchange(lines: readonly string[]): Promise<Record<string, unknown>[]> {
  const input = new PassThrough();
  let out = '';
  stderr = '';
  const served = serveMcp({
    env: {},
    input,
    send: (line) => (out += line),
    stderr: (text) => (stderr += text),
  });
  for (const line of lines) input.write(line);
  input.end();
  expect(await served).toBe(ExitCode.ok);
  expect(out.endsWith('\n')).toBe(true);
  // Human text goes to stderr, never among the messages.
  expect(out).not.toContain('broker: ');
  return out
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const request = (id: unknown, method: string, params?: unknown): string =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })}\n`;

const byId = (messages: Record<string, unknown>[], id: unknown) =>
  messages.find((m) => m.id === id);

describe('attack: an unexpected failure carries its own text to the agent', () => {
  it('answers a generic failure naming only the error class; the text is in no message', async () => {
    const input = new PassThrough();
    let out = '';
    // A bug's error may quote anything it saw; here an environment read that throws.
    const env = new Proxy(
      {},
      {
        get(_target, key) {
          if (key === 'BROKER_URL') throw new Error('detail-that-must-not-leak');
          return undefined;
        },
      },
    ) as NodeJS.ProcessEnv;
    const served = serveMcp({ env, input, send: (line) => (out += line), stderr: () => undefined });
    input.end(request(1, 'tools/call', { name: 'fetch', arguments: { target: 'personal:a.txt' } }));
    expect(await served).toBe(ExitCode.ok);
    expect(out).not.toContain('detail-that-must-not-leak');
    expect(JSON.parse(out)).toMatchObject({
      id: 1,
      result: {
        isError: true,
        structuredContent: { status: 'failed', error: 'unexpected failure (Error)' },
      },
    });
  });
});

describe('broker mcp protocol', () => {
  it('answers the version asked for when it speaks it, else its newest', async () => {
    const out = await exchange([
      request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {} }),
      request(2, 'initialize', { protocolVersion: '1999-01-01', capabilities: {} }),
      request(3, 'ping'),
    ]);
    expect(byId(out, 1)).toMatchObject({
      result: { protocolVersion: '2025-06-18', capabilities: { tools: {} } },
    });
    expect(byId(out, 2)).toMatchObject({ result: { protocolVersion: '2025-11-25' } });
    expect(byId(out, 3)).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });

  it('bad JSON, a non-JSON-RPC object, an odd id and an unknown method get JSON-RPC errors', async () => {
    const out = await exchange([
      'not json\n',
      '{"id":1,"method":"ping"}\n',
      request({ nested: true }, 'ping'),
      request('x', 'resources/list'),
    ]);
    expect(out.map((m) => [m.id, (m.error as { code?: number } | undefined)?.code])).toEqual(
      expect.arrayContaining([
        [null, -32700],
        [null, -32600],
        ['x', -32601],
      ]),
    );
    expect(out.filter((m) => m.id === null)).toHaveLength(3);
  });

  it('notifications and responses get no answer; CRLF and a last line without newline are read', async () => {
    const out = await exchange([
      '{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
      '{"jsonrpc":"2.0","id":9,"result":{}}\n',
      `${request(4, 'ping').trimEnd()}\r\n`,
      request(5, 'ping').trimEnd(),
    ]);
    expect(out.map((m) => m.id)).toEqual([4, 5]);
  });

  it('a line over 1 MiB is refused once and dropped; the next message is read', async () => {
    const out = await exchange([
      `{"pad":"${'x'.repeat(1024 * 1024 + 10)}`,
      '"}\n',
      request(6, 'ping'),
    ]);
    expect(out).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'message too long' } },
      { jsonrpc: '2.0', id: 6, result: {} },
    ]);
  });

  it('a tool call without the environment is a tool result with isError and exit 1', async () => {
    const out = await exchange([
      request(7, 'tools/call', { name: 'fetch', arguments: { target: 'personal:a.txt' } }),
      request(8, 'tools/call', {
        name: 'push',
        arguments: { target: 'personal:a.txt', force: true },
      }),
      request(9, 'tools/call', { name: 'fetch' }),
    ]);
    expect(byId(out, 7)).toMatchObject({
      result: {
        isError: true,
        structuredContent: {
          status: 'failed',
          error: 'BROKER_URL is not set',
          exit_code: ExitCode.usage,
        },
      },
    });
    expect(stderr).toContain('broker: BROKER_URL is not set');
    // push has no --force: the flag is not in its schema.
    expect(byId(out, 8)).toMatchObject({
      result: {
        isError: true,
        structuredContent: { error: 'unknown argument "force" for the push tool' },
      },
    });
    expect(byId(out, 9)).toMatchObject({
      result: {
        isError: true,
        structuredContent: { error: 'missing argument "target" for the fetch tool' },
      },
    });
  });
});

describe('progress notifications', () => {
  it('at most every 500 ms while bytes arrive, always the last byte, never the same value twice', () => {
    let now = 0;
    const sent: [number, number | null][] = [];
    const progress = progressNotifier(
      (p, total) => sent.push([p, total]),
      () => now,
    )('fetch', 300);
    progress.add(100); // the first is sent at once
    now = 100;
    progress.add(100); // too soon
    now = 700;
    progress.add(50); // half a second later
    progress.add(50); // the last byte, however soon
    progress.stop();
    expect(sent).toEqual([
      [100, 300],
      [250, 300],
      [300, 300],
    ]);
  });

  it('an unknown total reports what moved when the transfer stops', () => {
    const sent: number[] = [];
    const progress = progressNotifier(
      (p) => sent.push(p),
      () => 0,
    )('push', null);
    progress.add(10);
    progress.add(5);
    progress.stop();
    expect(sent).toEqual([10, 15]);
  });
});
