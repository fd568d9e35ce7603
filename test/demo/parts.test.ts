/**
 * The demo's parts in-process: seeding never overwrites, the generated config passes the
 * real config validation with its secrets only in files, port choice, the log
 * sink, when `broker start` means serve, and signal handling under `npm start`.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../broker/config.js';
import { claudeMcpAddLine, mcpClientConfig, tokensEnvFile } from '../../broker/demo/banner.js';
import {
  demoConfigYaml,
  DEMO_SECRET_FILES,
  freshSecrets,
  randomToken,
} from '../../broker/demo/config.js';
import { demoLogSink } from '../../broker/demo/log-sink.js';
import { choosePort, portIsFree } from '../../broker/demo/ports.js';
import { DEMO_FILES, seedDemoCloud } from '../../broker/demo/seed.js';
import { hasConfig, stopOnSignal } from '../../cli/owner/start.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'broker-demo-parts-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('seedDemoCloud', () => {
  it('creates the example files once and never overwrites an existing one', async () => {
    expect(await seedDemoCloud(dir)).toEqual([...DEMO_FILES.keys()]);
    for (const [path, content] of DEMO_FILES)
      expect(readFileSync(join(dir, path), 'utf8')).toBe(content);
    writeFileSync(join(dir, 'Documents', 'notes.txt'), 'edited by the owner\n');
    rmSync(join(dir, 'Projects'), { recursive: true });
    expect(await seedDemoCloud(dir)).toEqual(['Projects/plan.md']);
    expect(readFileSync(join(dir, 'Documents', 'notes.txt'), 'utf8')).toBe('edited by the owner\n');
  });

  it('leaves a folder standing where an example file would go', async () => {
    mkdirSync(join(dir, 'Documents', 'welcome.md'), { recursive: true });
    expect(await seedDemoCloud(dir)).not.toContain('Documents/welcome.md');
  });

  it('fails loudly when a folder cannot be made (a file in the way)', async () => {
    writeFileSync(join(dir, 'Documents'), 'a file, not a folder');
    await expect(seedDemoCloud(dir)).rejects.toThrow(/EEXIST|ENOTDIR/);
  });
});

describe('demo config', () => {
  it('passes the real validation; secrets come only from the files beside it', () => {
    const secrets = freshSecrets();
    const yaml = demoConfigYaml({ cloudUrl: 'http://127.0.0.1:4321', cloudUser: 'demo', port: 0 });
    for (const value of Object.values(secrets)) expect(yaml).not.toContain(value);
    const files = new Map([
      [join(dir, DEMO_SECRET_FILES.agent), `${secrets.agent}\n`],
      [join(dir, DEMO_SECRET_FILES.transfer), `${secrets.transfer}\n`],
      [join(dir, DEMO_SECRET_FILES.appPassword), `${secrets.appPassword}\n`],
      [join(dir, DEMO_SECRET_FILES.metrics), `${secrets.metrics}\n`],
    ]);
    const { config, warnings } = parseConfig(yaml, {
      baseDir: dir,
      env: {},
      readFile: (path) => {
        const text = files.get(path);
        if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
        return text;
      },
    });
    expect(config.tokens).toEqual({
      agent: secrets.agent,
      transfer: secrets.transfer,
      metrics: secrets.metrics,
    });
    expect(config.approval).toBe('console');
    expect(config.server.host).toBe('127.0.0.1');
    expect(config.data_dir).toBe(dir);
    const demo = config.instances.get('demo');
    expect(demo).toMatchObject({
      url: 'http://127.0.0.1:4321',
      username: 'demo',
      app_password: secrets.appPassword,
      discovery: true,
    });
    expect(warnings.some((w) => w.includes('plain http'))).toBe(true);
  });

  it('without the secret files it does not load (no default secrets)', () => {
    const yaml = demoConfigYaml({ cloudUrl: 'http://127.0.0.1:4321', cloudUser: 'demo', port: 0 });
    const missing = (): string => {
      throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
    };
    expect(() => parseConfig(yaml, { baseDir: dir, env: {}, readFile: missing })).toThrow(
      'tokens.agent_file',
    );
  });

  it('tokens are random, 43 characters, and differ', () => {
    const a = freshSecrets();
    const b = freshSecrets();
    expect(a.agent).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.agent, a.transfer, a.appPassword, a.metrics, b.agent]).size).toBe(5);
    expect(randomToken(() => Buffer.alloc(32, 0xff))).toBe(`${'_'.repeat(42)}8`);
  });
});

describe('banner pieces', () => {
  it('the mcpServers JSON and the claude line carry URL and bearer token', () => {
    const parsed = JSON.parse(mcpClientConfig('http://127.0.0.1:1/mcp', 'tok')) as unknown;
    expect(parsed).toEqual({
      mcpServers: {
        'nextcloud-broker': {
          type: 'http',
          url: 'http://127.0.0.1:1/mcp',
          headers: { Authorization: 'Bearer tok' },
        },
      },
    });
    expect(claudeMcpAddLine('http://127.0.0.1:1/mcp', 'tok')).toBe(
      'claude mcp add --transport http nextcloud-broker http://127.0.0.1:1/mcp --header "Authorization: Bearer tok"',
    );
  });

  it('tokens.env holds exactly what the CLI reads', () => {
    const text = tokensEnvFile('http://127.0.0.1:9', 'transfer-tok');
    const exports = text.split('\n').filter((l) => l.startsWith('export '));
    expect(exports).toEqual([
      'export BROKER_URL=http://127.0.0.1:9',
      'export BROKER_TRANSFER_TOKEN=transfer-tok',
    ]);
  });
});

describe('choosePort', () => {
  let held: Server;
  afterEach(async () => {
    await new Promise<void>((r) => held.close(() => r()));
  });

  it('keeps a free port and gives it up when busy', async () => {
    held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const port = (held.address() as { port: number }).port;
    expect(await portIsFree(port, '127.0.0.1')).toBe(false);
    expect(await choosePort(port, '127.0.0.1')).toEqual({ port: 0, preferredBusy: true });
    await new Promise<void>((r) => held.close(() => r()));
    expect(await choosePort(port, '127.0.0.1')).toEqual({ port, preferredBusy: false });
    held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
  });
});

describe('demoLogSink', () => {
  it('turns JSON lines into short human lines and drops the expected http warning', () => {
    const out: string[] = [];
    const sink = demoLogSink((t) => out.push(t));
    sink(
      `${JSON.stringify({ ts: 'x', level: 'warn', msg: 'config', warning: 'instances.demo.url uses plain http; …' })}\n`,
    );
    sink(
      `${JSON.stringify({ ts: 'x', level: 'warn', msg: 'authentication failed', surface: 'agent' })}\n`,
    );
    sink('not json\n');
    sink('[1,2]\n');
    expect(out).toEqual([
      'broker warn: authentication failed {"surface":"agent"}\n',
      'not json\n',
      '[1,2]\n',
    ]);
  });
});

describe('hasConfig: when `broker start` is `broker serve`', () => {
  it('--config, $BROKER_CONFIG or ./config.yaml; otherwise the demo', () => {
    expect(hasConfig([], {}, dir)).toBe(false);
    expect(hasConfig([], { BROKER_CONFIG: '' }, dir)).toBe(false);
    expect(hasConfig(['--config', 'x.yaml'], {}, dir)).toBe(true);
    expect(hasConfig(['--config=x.yaml'], {}, dir)).toBe(true);
    expect(hasConfig([], { BROKER_CONFIG: '/etc/broker.yaml' }, dir)).toBe(true);
    writeFileSync(join(dir, 'config.yaml'), '');
    expect(hasConfig([], {}, dir)).toBe(true);
  });
});

describe('stopOnSignal', () => {
  it('resolves on the first signal, ignores a prompt repeat, forces on a late one', async () => {
    const proc = new EventEmitter();
    let t = 0;
    const forced: number[] = [];
    const err: string[] = [];
    const stopped = stopOnSignal(
      proc as unknown as NodeJS.Process,
      () => t,
      (c) => forced.push(c),
      (s) => err.push(s),
    );
    proc.emit('SIGINT');
    expect(await stopped).toBe('SIGINT');
    t = 200;
    proc.emit('SIGINT'); // npm forwarding the same Ctrl-C
    proc.emit('SIGTERM');
    expect(forced).toEqual([]);
    t = 5_000;
    proc.emit('SIGINT');
    expect(forced).toEqual([130]);
    expect(err.join('')).toContain('SIGINT again');
  });
});
