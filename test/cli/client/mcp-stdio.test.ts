/**
 * `broker mcp` as an MCP client on the agent's host starts it: the agent's file
 * (support/cli-bundle.ts) spawned by the official SDK's stdio client, against the real
 * daemon and the fake Nextcloud. Every JSON-RPC message is recorded both ways, so the
 * tests can say what crossed the protocol channel (and that file content never did).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { cliBundle } from '../../../support/cli-bundle.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { TRANSFER_TOKEN } from '../../../support/tokens.js';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

/** The SDK's stdio transport, recording every message that crosses it and every error. */
class RecordingTransport implements Transport {
  readonly messages: { way: 'to server' | 'to client'; message: JSONRPCMessage }[] = [];
  readonly errors: Error[] = [];
  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];

  constructor(readonly inner: StdioClientTransport) {
    inner.onmessage = (message: JSONRPCMessage) => {
      this.messages.push({ way: 'to client', message });
      this.onmessage?.(message);
    };
    // A line on stdout that is not a JSON-RPC message lands here.
    inner.onerror = (error) => {
      this.errors.push(error);
      this.onerror?.(error);
    };
    inner.onclose = () => this.onclose?.();
  }
  start(): Promise<void> {
    return this.inner.start();
  }
  send(message: JSONRPCMessage): Promise<void> {
    this.messages.push({ way: 'to server', message });
    return this.inner.send(message);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

let broker: Broker;
let bundle: string;
beforeAll(async () => {
  [broker, bundle] = await Promise.all([startBroker(), cliBundle()]);
});
afterAll(async () => {
  await broker.close();
});

interface Session {
  readonly client: Client;
  readonly wire: RecordingTransport;
  readonly stage: string;
  stderr(): string;
}
const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.client.close();
});

/**
 * `broker mcp` started by the SDK's client, as an agent's MCP client starts it, in a
 * fresh working folder (or `cwd`, a way to reach it) with its staging folder inside.
 */
async function connect(cwd?: string): Promise<Session> {
  const stage = cwd ?? mkdtempSync(join(tmpdir(), 'broker-mcp-'));
  const inner = new StdioClientTransport({
    command: process.execPath,
    args: [bundle, 'mcp'],
    cwd: stage,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
      BROKER_STAGE_DIR: join(stage, 'stage'),
    },
    stderr: 'pipe',
  });
  let stderr = '';
  inner.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const wire = new RecordingTransport(inner);
  const client = new Client({ name: 'mcp-stdio-test', version: '1' });
  await client.connect(wire);
  const session = { client, wire, stage, stderr: () => stderr };
  open.push(session);
  return session;
}

type Answer = Record<string, unknown>;
async function call(
  s: Session,
  name: string,
  args: Record<string, unknown>,
  onprogress?: (p: Progress) => void,
): Promise<{ answer: Answer; isError: boolean; text: string }> {
  const result = await s.client.callTool(
    { name, arguments: args },
    undefined,
    onprogress === undefined ? undefined : { onprogress },
  );
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]?.type).toBe('text');
  const text = content[0]?.text ?? '';
  // The text is the command's JSON line; the structured content is the same object.
  expect(JSON.parse(text)).toEqual(result.structuredContent);
  return { answer: result.structuredContent as Answer, isError: result.isError === true, text };
}

describe('broker mcp over stdio', () => {
  it('lists the four tools with their annotations; none is read-only', async () => {
    const s = await connect();
    expect(s.client.getServerVersion()?.name).toBe('broker');
    const { tools } = await s.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['fetch', 'push', 'checkout', 'checkin']);
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(hints).toEqual({
      fetch: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: true,
      },
      push: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: true,
      },
      checkout: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
      checkin: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    });
    // The command's arguments: INSTANCE:PATH, LOCAL, and its own flags as booleans.
    const props = Object.fromEntries(
      tools.map((t) => [t.name, Object.keys(t.inputSchema.properties ?? {})]),
    );
    expect(props).toEqual({
      fetch: ['target', 'local', 'force', 'recursive'],
      push: ['target', 'local'],
      checkout: ['target', 'local', 'force'],
      checkin: ['target', 'local', 'abandon'],
    });
    expect(s.wire.errors).toEqual([]);
  });

  it("fetches a file to disk and answers the CLI's object; the content never crosses MCP", async () => {
    const marker = `MARKER-${randomBytes(12).toString('hex')}`;
    const body = `line one\n${marker}\nline three\n`;
    await broker.fake.writeFile('McpFetch/secret.txt', body);
    await broker.grant([{ path: 'McpFetch', mode: 'read' }]);
    const s = await connect();
    const progress: Progress[] = [];
    const { answer, isError, text } = await call(
      s,
      'fetch',
      { target: 'personal:McpFetch/secret.txt' },
      (p) => progress.push(p),
    );
    expect(isError).toBe(false);
    const local = join(s.stage, 'stage', 'personal', 'McpFetch', 'secret.txt');
    expect(answer).toMatchObject({
      status: 'fetched',
      local_path: local,
      size: Buffer.byteLength(body),
      sha256: sha(body),
      exit_code: ExitCode.ok,
    });
    expect(answer.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(readFileSync(local, 'utf8')).toBe(body);
    // The client gave a progressToken: the transfer reported its bytes, the last one whole.
    expect(progress.at(-1)).toMatchObject({
      progress: Buffer.byteLength(body),
      total: Buffer.byteLength(body),
    });

    // Every message both ways, the fetch's answer and progress included: no marker.
    expect(s.wire.messages.some((m) => JSON.stringify(m.message).includes('"progressToken"'))).toBe(
      true,
    );
    // The record holds the call and its answer (the capture is of the real exchange).
    const recorded = s.wire.messages.map((m) => `${m.way} ${JSON.stringify(m.message)}`);
    expect(recorded.some((m) => m.startsWith('to server') && m.includes('"tools/call"'))).toBe(
      true,
    );
    expect(recorded.some((m) => m.startsWith('to client') && m.includes(local))).toBe(true);
    expect(text).not.toContain(marker);
    expect(JSON.stringify(s.wire.messages)).not.toContain(marker);
    expect(s.stderr()).not.toContain(marker);
    // stdout held only JSON-RPC messages (anything else would be a transport error).
    expect(s.wire.errors).toEqual([]);

    // The same call again transfers nothing (idempotent, as annotated).
    const again = await call(s, 'fetch', { target: 'personal:McpFetch/secret.txt' });
    expect(again.answer).toMatchObject({ status: 'unchanged', etag: answer.etag });
  });

  it('pushes a local file, verified, and the remote file is what was sent', async () => {
    await broker.fake.mkdir('McpPush');
    await broker.grant([{ path: 'McpPush', mode: 'write' }]);
    const s = await connect();
    const src = join(s.stage, 'notes.md');
    writeFileSync(src, 'written by the agent');
    const { answer, isError } = await call(s, 'push', {
      target: 'personal:McpPush/notes.md',
      local: src,
    });
    expect(isError).toBe(false);
    expect(answer).toMatchObject({
      status: 'pushed',
      local_path: src,
      sha256: sha('written by the agent'),
      size: 20,
      exit_code: ExitCode.ok,
    });
    expect((await broker.fake.readFile('McpPush/notes.md'))?.toString()).toBe(
      'written by the agent',
    );
    expect(JSON.stringify(s.wire.messages)).not.toContain('written by the agent');
    expect(s.wire.errors).toEqual([]);
  });

  it('no grant: a tool result with isError, the code, the words and exit code 3; the server stays up', async () => {
    await broker.fake.writeFile('McpSecret/x.txt', 'no');
    const s = await connect();
    const before = broker.fake.requests.length;
    const { answer, isError } = await call(s, 'fetch', { target: 'personal:McpSecret/x.txt' });
    expect(isError).toBe(true);
    expect(answer).toMatchObject({
      status: 'failed',
      code: 'no_grant',
      exit_code: ExitCode.refused,
    });
    expect(answer.error).toMatch(/^refused: /);
    expect(typeof answer.next_step).toBe('string');
    expect(broker.fake.requests.length).toBe(before);
    expect(existsSync(join(s.stage, 'stage', 'personal', 'McpSecret', 'x.txt'))).toBe(false);
    // The same process answers the next call.
    expect((await s.client.listTools()).tools).toHaveLength(4);
  });

  it('arguments outside the schema, and a target that looks like a flag, are usage failures (exit 1)', async () => {
    const s = await connect();
    const unknown = await call(s, 'fetch', { target: 'personal:a.txt', overwrite: true });
    expect(unknown.isError).toBe(true);
    expect(unknown.answer).toMatchObject({ status: 'failed', exit_code: ExitCode.usage });
    expect(unknown.answer.error).toContain('unknown argument "overwrite"');
    // `--` goes before the names: "--force" is a name here, never the flag.
    const flag = await call(s, 'fetch', { target: '--force' });
    expect(flag.answer).toMatchObject({ status: 'failed', exit_code: ExitCode.usage });
    expect(flag.answer.error).toBe('"--force" is not INSTANCE:PATH');
    await expect(s.client.callTool({ name: 'delete', arguments: {} })).rejects.toThrow(
      /unknown tool/,
    );
  });
});

describe('attack: a local path leads out of the folders broker mcp may use', () => {
  /** A working folder holding `link` → a folder outside it (the agent's planted link). */
  function linkedOut(): { s: Promise<Session>; outside: string } {
    const work = mkdtempSync(join(tmpdir(), 'broker-mcp-work-'));
    const outside = mkdtempSync(join(tmpdir(), 'broker-mcp-outside-'));
    symlinkSync(outside, join(work, 'link'));
    return { s: connect(work), outside };
  }

  it('fetch into link/… where link leads outside: refused (exit 1), nothing written there', async () => {
    await broker.fake.writeFile('McpOut/a.txt', 'remote');
    await broker.grant([{ path: 'McpOut', mode: 'read' }]);
    const { s: session, outside } = linkedOut();
    const s = await session;
    const { answer, isError } = await call(s, 'fetch', {
      target: 'personal:McpOut/a.txt',
      local: join(s.stage, 'link', 'a.txt'),
    });
    expect(isError).toBe(true);
    expect(answer).toMatchObject({ exit_code: ExitCode.usage });
    expect(String(answer.error)).toContain('outside the folders broker mcp may use');
    expect(readdirSync(outside)).toEqual([]);
  });

  it('push from link/… (a file outside, read through the link): refused, nothing uploaded', async () => {
    await broker.fake.mkdir('McpOutPush');
    await broker.grant([{ path: 'McpOutPush', mode: 'write' }]);
    const { s: session, outside } = linkedOut();
    writeFileSync(join(outside, 'id_ed25519'), 'a private key');
    const s = await session;
    const { answer, isError } = await call(s, 'push', {
      target: 'personal:McpOutPush/key',
      local: join(s.stage, 'link', 'id_ed25519'),
    });
    expect(isError).toBe(true);
    expect(answer).toMatchObject({ exit_code: ExitCode.usage });
    expect(await broker.fake.exists('McpOutPush/key')).toBe(false);
  });

  it('an absolute path outside the working folder and the staging folder is refused as well', async () => {
    await broker.fake.writeFile('McpAbs/a.txt', 'remote');
    await broker.grant([{ path: 'McpAbs', mode: 'read' }]);
    const elsewhere = mkdtempSync(join(tmpdir(), 'broker-mcp-elsewhere-'));
    const s = await connect();
    const { answer } = await call(s, 'fetch', {
      target: 'personal:McpAbs/a.txt',
      local: join(elsewhere, 'a.txt'),
    });
    expect(answer).toMatchObject({ exit_code: ExitCode.usage });
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('a working folder that is itself reached through a link (a linked home, /tmp) still works', async () => {
    await broker.fake.writeFile('McpLinkedHome/a.txt', 'remote');
    await broker.grant([{ path: 'McpLinkedHome', mode: 'read' }]);
    const real = mkdtempSync(join(tmpdir(), 'broker-mcp-realhome-'));
    const viaLink = `${real}-link`;
    symlinkSync(real, viaLink);
    mkdirSync(join(real, 'docs'));
    const s = await connect(viaLink);
    const { answer, isError } = await call(s, 'fetch', {
      target: 'personal:McpLinkedHome/a.txt',
      local: join(viaLink, 'docs', 'a.txt'),
    });
    expect(isError).toBe(false);
    expect(answer).toMatchObject({ status: 'fetched', exit_code: ExitCode.ok });
    expect(readFileSync(join(real, 'docs', 'a.txt'), 'utf8')).toBe('remote');
  });
});
