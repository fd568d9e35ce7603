/**
 * The daemon as the owner runs it: `broker serve` (and `broker start`, which is serve
 * when given a configuration) as a subprocess with a configuration
 * whose instance is the real server and `approval: console`. An agent asks over MCP, the
 * owner approves by typing on the daemon's console, the CLI fetches through it, and on
 * SIGTERM it stops cleanly with an audit log that verifies.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';

import { Dav } from './dav.js';
import { realServer } from './server.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call, connectMcp } from '../../support/mcp.js';
import { runCli, spawnBrokerCommand } from '../../support/processes.js';

const server = realServer();
const owner = new Dav(server.url, server.owner);
let dir: string;

beforeAll(async () => {
  await server.reset();
  dir = mkdtempSync(join(tmpdir(), 'broker-real-serve-'));
});
afterAll(async () => {
  await server.reset();
});

function config(name: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'server: { host: 127.0.0.1, port: 0, allowed_hosts: [localhost, 127.0.0.1] }',
      'tokens: { agent_env: T_AGENT, transfer_env: T_TRANSFER }',
      'approval: console',
      `data_dir: ${join(dir, `data-${name}`)}`,
      'logging: { level: info }',
      'instances:',
      `  personal: { url: "${server.url}", username: "${server.owner.user}", app_password_env: T_NC }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

describe('the daemon on the real server', () => {
  it.each(['serve', 'start'])(
    'broker %s: request, approve on the console, fetch through the CLI, SIGTERM: exit 0, audit intact',
    async (command) => {
      await server.reset();
      await owner.writeFile('Served/report.txt', 'the quarterly report');
      const broker = spawnBrokerCommand([command, '--config', config(command)], {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          T_AGENT: AGENT_TOKEN,
          T_TRANSFER: TRANSFER_TOKEN,
          T_NC: server.owner.password,
        },
      });
      let code: number | null;
      try {
        const logs = await broker.waitForStderr(/"msg":"broker listening"[^\n]*"port":\d+/);
        const port = Number(/"msg":"broker listening"[^\n]*"port":(\d+)/.exec(logs)?.[1]);
        const url = `http://127.0.0.1:${port}`;
        const agent = await connectMcp(`${url}/mcp`, AGENT_TOKEN);
        const asked = await call(agent, 'request_access', {
          instance: 'personal',
          reason: 'summarise the report',
          items: [{ path: 'Served', mode: 'read' }],
        });
        expect(asked.status).toBe('pending');
        await broker.waitFor(/Request 1[\s\S]*Served/);
        broker.type('approve 1');
        await broker.waitFor('Approved request 1');
        expect(await call(agent, 'check_access', { request: 1 })).toMatchObject({
          state: 'approved',
        });
        const listed = await call(agent, 'list', { instance: 'personal', path: 'Served' });
        expect((listed.entries as { name: string }[]).map((e) => e.name)).toEqual(['report.txt']);
        await agent.close();

        const stage = mkdtempSync(join(tmpdir(), 'broker-real-serve-stage-'));
        const fetched = await runCli(['fetch', 'personal:Served/report.txt'], {
          BROKER_URL: url,
          BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
          BROKER_STAGE_DIR: stage,
        });
        expect(fetched.code).toBe(ExitCode.ok);
        expect(fetched.json).toMatchObject({ status: 'fetched', size: 20 });
      } finally {
        code = await broker.stop('SIGTERM');
      }
      expect(code).toBe(0);
      expect(broker.stderr()).not.toContain(server.owner.password);
      const verify = await runCli(
        ['audit', 'verify', '--data-dir', join(dir, `data-${command}`)],
        {},
      );
      expect(verify.code).toBe(ExitCode.ok);
    },
  );
});
