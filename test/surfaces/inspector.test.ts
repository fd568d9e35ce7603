/**
 * MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned) as a real client of a
 * real daemon, in both protocol revisions: it lists the tools, calls request_access,
 * and once the owner decides (on the console, or over the owner socket as `broker
 * approve` does) it gets a result that validates against the tool's declared output
 * schema. In 2026-07-28 it awaits request_access as a task; it used to exit 1 with "data
 * must NOT have additional properties" there, and printed 21 schema-portability warnings
 * for the tool list. A wrong or missing token is answered 401, which Inspector reports as
 * "Interactive OAuth requires a TTY" (docs/clients.md says so).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askOwner } from '../../broker/approval/owner/client.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { cliBundle } from '../../support/cli-bundle.js';
import { ROOT, spawnBroker, writeBrokerConfig, type BrokerChild } from '../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';

const LAUNCHER = join(
  ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);

const TOOLS = [
  'request_access',
  'check_access',
  'list_instances',
  'list',
  'search',
  'move',
  'trash',
  'mkdir',
  'collections',
  'calendar_events',
  'calendar_create_event',
  'contacts_search',
];

let fake: FakeNextcloud;
let dir: string;
let home: string;
let broker: BrokerChild;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'broker-inspector-'));
  // Inspector keeps a catalog and client storage under ~/.mcp-inspector: a home of its own.
  home = mkdtempSync(join(tmpdir(), 'broker-inspector-home-'));
  broker = await spawnBroker(writeBrokerConfig(dir, { instances: { personal: fake.url } }));
}, 60_000);
afterAll(async () => {
  await broker.stop(2_000);
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Era = 'legacy' | 'modern';

/** Runs Inspector's CLI with `args` to its end. */
function launch(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [LAUNCHER, '--cli', ...args], {
    cwd: home,
    env: { PATH: process.env.PATH, HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** `inspector --cli <broker>/mcp … --method M …` with the agent's bearer header. */
function inspector(era: Era, args: string[], token: string | null = AGENT_TOKEN): Promise<Run> {
  return launch([
    `${broker.url}/mcp`,
    ...['--transport', 'http', '--protocol-era', era, '--format', 'json'],
    ...(token === null ? [] : ['--header', `Authorization: Bearer ${token}`]),
    ...args,
  ]);
}

interface ToolCallResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

/** What `--format json` prints on stdout: `{"result": …}`. */
const parsed = (run: Run): unknown => (JSON.parse(run.stdout) as { result: unknown }).result;

const callArgs = (tool: string, args: Record<string, unknown>): string[] => [
  ...['--method', 'tools/call', '--tool-name', tool],
  ...['--tool-args-json', JSON.stringify(args)],
];

const requestArgs = (path: string) =>
  callArgs('request_access', {
    instance: 'personal',
    reason: `Inspector ${path}`,
    items: [{ path, mode: 'read' }],
  });

describe.each<Era>(['legacy', 'modern'])('MCP Inspector CLI, protocol era %s', (era) => {
  it('lists the twelve tools, with no schema-portability finding', async () => {
    const run = await inspector(era, ['--method', 'tools/list']);
    expect(run.stderr).not.toMatch(/portability/i);
    expect(run.code).toBe(0);
    const { tools } = parsed(run) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
  });

  it('--strict finds nothing to report either', async () => {
    const run = await inspector(era, ['--method', 'tools/list', '--strict']);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toMatch(/Warning|Error: tool/);
  });

  it('a missing or wrong token is a 401, which Inspector calls "Interactive OAuth requires a TTY"', async () => {
    for (const token of [null, 'not-the-agent-token']) {
      const run = await inspector(era, ['--method', 'tools/list'], token);
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).toContain('Interactive OAuth requires a TTY');
    }
  });
});

/**
 * Starts Inspector's request_access in 2026-07-28, which waits on the task, and resolves
 * once the request is on the broker's console: its number, and Inspector's run.
 */
async function askModern(path: string): Promise<{ request: number; asking: Promise<Run> }> {
  const from = broker.stdout().length;
  const asking = inspector('modern', requestArgs(path));
  const shown = await broker.waitConsole(/Request ([1-9][0-9]*) · instance personal/, from, 30_000);
  return { request: Number(shown[1]), asking };
}

describe('request_access through Inspector, decided by the owner', () => {
  it('2025-11-25: pending at once; after `approve N` on the console check_access says approved', async () => {
    const asked = await inspector('legacy', requestArgs('Inspector/Legacy'));
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    const pending = parsed(asked) as ToolCallResult;
    expect(pending.isError).toBe(false);
    expect(pending.structuredContent).toMatchObject({ status: 'pending', state: 'pending' });
    const request = pending.structuredContent?.['request'] as number;

    const from = broker.stdout().length;
    broker.type(`approve ${request}`);
    await broker.waitConsole(new RegExp(`Approved request ${request}\\b`), from, 20_000);

    const checked = await inspector('legacy', callArgs('check_access', { request }));
    expect(checked.code).toBe(0);
    expect((parsed(checked) as ToolCallResult).structuredContent).toMatchObject({
      status: 'ok',
      request,
      state: 'approved',
      items: [{ granted: true, grant_state: 'active' }],
    });
  });

  it('2026-07-28: awaited as a task until `approve N` over the owner socket, then the decided request', async () => {
    const { request, asking } = await askModern('Inspector/Modern');
    const decided = await askOwner(join(dir, 'data'), {
      op: 'command',
      text: `approve ${request}`,
    });
    expect(decided).toMatchObject({ ok: true });

    const done = await asking;
    expect(done.stderr).not.toMatch(/must NOT have additional properties/);
    expect(done.code).toBe(0);
    const result = parsed(done) as ToolCallResult;
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({
      status: 'ok',
      request,
      instance: 'personal',
      state: 'approved',
      items: [{ n: 1, path: 'Inspector/Modern', granted: true, grant_state: 'active' }],
    });
  }, 60_000);

  it('2026-07-28: a denial completes the task too, with a valid result', async () => {
    const { request, asking } = await askModern('Inspector/Denied');
    broker.type(`deny ${request}`);
    const done = await asking;
    expect(done.code).toBe(0);
    expect((parsed(done) as ToolCallResult).structuredContent).toMatchObject({
      status: 'ok',
      state: 'denied',
    });
  }, 60_000);
});

describe('`broker mcp` (stdio) through Inspector', () => {
  it('lists its four tools with no schema-portability finding', async () => {
    const run = await launch([
      ...['-e', `BROKER_URL=${broker.url}`, '-e', `BROKER_TRANSFER_TOKEN=${TRANSFER_TOKEN}`],
      ...['--format', 'json', '--strict', '--method', 'tools/list'],
      ...[process.execPath, await cliBundle(), 'mcp'],
    ]);
    expect(run.stderr).not.toMatch(/portability|Warning/);
    expect(run.code).toBe(0);
    const { tools } = parsed(run) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name)).toEqual(['fetch', 'push', 'checkout', 'checkin']);
  });
});
