/**
 * `broker start` with a configuration present is exactly `broker serve` (as a real
 * subprocess): it serves, and with approval: console the owner approves on its stdin.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { spawnBrokerCommand } from '../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call, connectMcp } from '../../support/mcp.js';

const dirs: string[] = [];
const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...extra,
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('broker start with a config: exactly broker serve', () => {
  let fake: FakeNextcloud;
  beforeAll(async () => {
    fake = await startFakeNextcloud({ password: APP_PASSWORD });
    await fake.writeFile('Notes/a.txt', 'a\n');
  });
  afterAll(async () => {
    await fake.close();
  });

  it('serves from ./config.yaml with the console approving on stdin', async () => {
    const cwd = tempDir('broker-start-config-');
    writeFileSync(
      join(cwd, 'config.yaml'),
      [
        'server: { host: 127.0.0.1, port: 0, allowed_hosts: [localhost, 127.0.0.1] }',
        'tokens: { agent_env: T_AGENT, transfer_env: T_TRANSFER }',
        'approval: console',
        'data_dir: ./state',
        'instances:',
        `  personal: { url: "${fake.url}", username: ${fake.user}, app_password_env: T_NC }`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const broker = spawnBrokerCommand(['start'], {
      cwd,
      env: cleanEnv({ T_AGENT: AGENT_TOKEN, T_TRANSFER: TRANSFER_TOKEN, T_NC: APP_PASSWORD }),
    });
    try {
      const logs = await broker.waitForStderr(/"msg":"broker listening"[^\n]*\n/);
      const port = /"msg":"broker listening"[^\n]*"port":(\d+)/.exec(logs)?.[1];
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/health`)).status).toBe(200);
      // No demo: nothing printed about it, nothing created under ./data.
      expect(broker.stdout()).not.toContain('DEMO');
      expect(existsSync(join(cwd, 'data'))).toBe(false);
      const agent = await connectMcp(`${base}/mcp`, AGENT_TOKEN);
      await call(agent, 'request_access', {
        instance: 'personal',
        reason: 'notes',
        items: [{ path: 'Notes', mode: 'read' }],
      });
      await broker.waitFor('Request 1');
      broker.type('approve 1 1 2h');
      await broker.waitFor('Approved request 1');
      const listed = await call(agent, 'list', { instance: 'personal', path: 'Notes' });
      await agent.close();
      expect(listed.status).toBe('ok');
      expect(JSON.stringify(listed)).toContain('a.txt');
    } finally {
      expect(await broker.stop('SIGTERM')).toBe(0);
    }
    expect(verifyAudit(join(cwd, 'state'))).toMatchObject({ ok: true });
  });

  it('--config FILE naming a missing file fails like serve (exit 1), no demo', async () => {
    const cwd = tempDir('broker-start-missing-');
    const broker = spawnBrokerCommand(['start', '--config', 'nowhere.yaml'], {
      cwd,
      env: cleanEnv(),
    });
    expect(await broker.exited).toBe(1);
    expect(broker.stderr()).toContain('broker serve:');
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  });
});
