/**
 * `broker serve` as a real subprocess: it starts from a config file, answers /health,
 * serves MCP with the configured token, and on SIGTERM drains, flushes the audit log
 * and exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call, connectMcp } from '../../support/mcp.js';

const ROOT = join(import.meta.dirname, '..', '..');

let fake: FakeNextcloud;
let dir: string;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'broker-serve-'));
});
afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(port = 0, name = 'config.yaml'): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      `server: { host: 127.0.0.1, port: ${port}, allowed_hosts: [localhost, 127.0.0.1] }`,
      'tokens: { agent_env: T_AGENT, transfer_env: T_TRANSFER }',
      'approval: console',
      `data_dir: ./data-${name}`,
      'logging: { level: info }',
      'instances:',
      `  personal: { url: "${fake.url}", username: ${fake.user}, app_password_env: T_NC, discovery: false }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

function waitForPort(child: ChildProcess, stderr: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no listening line:\n${stderr.join('')}`)),
      15_000,
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString());
      for (const line of stderr.join('').split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'broker listening' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`exited early (${code}):\n${stderr.join('')}`)));
  });
}

/** `broker serve --config FILE` from source, with the config's secrets in its environment. */
function serveProcess(config: string) {
  return spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'serve', '--config', config], {
    cwd: ROOT,
    env: { ...process.env, T_AGENT: AGENT_TOKEN, T_TRANSFER: TRANSFER_TOKEN, T_NC: APP_PASSWORD },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

describe('broker serve (subprocess)', () => {
  it('answers health and MCP, then SIGTERM drains, audits the stop and exits 0', async () => {
    const config = writeConfig();
    const child = serveProcess(config);
    const stderr: string[] = [];
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    try {
      const port = await waitForPort(child, stderr);
      const base = `http://127.0.0.1:${port}`;
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok' });
      const agent = await connectMcp(`${base}/mcp`, AGENT_TOKEN);
      expect(await call(agent, 'list_instances')).toMatchObject({ status: 'ok' });
      await agent.close();
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const logs = stderr.join('');
    expect(logs).toContain('"msg":"broker stopped"');
    for (const secret of [AGENT_TOKEN, TRANSFER_TOKEN, APP_PASSWORD])
      expect(logs).not.toContain(secret);
    const events = readFileSync(join(dir, 'data-config.yaml', 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { event: string }).event);
    expect(events[0]).toBe('start');
    expect(events.at(-1)).toBe('stop');
    expect(verifyAudit(join(dir, 'data-config.yaml'))).toMatchObject({ ok: true });
  });

  it('refuses to start on a bad config, naming the problem (exit 1)', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server: { port: "eighty" }\n', { mode: 0o600 });
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'cli/main.ts', 'serve', '--config', file],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(err).toContain('server.port');
  });

  it('exits 2 when it cannot listen (port taken), closing what it opened', async () => {
    const blocker = createNetServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const taken = (blocker.address() as AddressInfo).port;
    try {
      const config = writeConfig(taken, 'taken.yaml');
      const child = serveProcess(config);
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(2);
      expect(err).toContain('EADDRINUSE');
      // The audit lock was released: a second broker on the same data dir may start.
      expect(verifyAudit(join(dir, 'data-taken.yaml'))).toMatchObject({ ok: true });
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});
