/**
 * A decision made with `broker approve` from another shell appears on the running
 * console, naming the shell as its source (issue 36.5): every step a real process, the
 * broker's console headless as under a service manager. (The room's side, with an
 * encrypted Matrix room, is test/cli/owner/pairing-commands.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { callTool, connectMcp } from '../../support/mcp.js';
import {
  runCli,
  spawnBroker,
  writeBrokerConfig,
  type BrokerChild,
} from '../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD } from '../../support/tokens.js';

let fake: FakeNextcloud;
let dir: string;
let broker: BrokerChild | undefined;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'broker-shell-'));
});
afterAll(async () => {
  await broker?.stop(1_000);
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a decision from the owner socket, on the console', () => {
  it('broker approve and broker revoke in a second shell are printed on the console, naming the shell', async () => {
    const config = writeBrokerConfig(dir, { instances: { personal: fake.url } });
    broker = await spawnBroker(config);
    const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
    const asked = await callTool(agent, 'request_access', {
      instance: 'personal',
      reason: 'monthly report',
      items: [{ path: 'Reports', mode: 'read' }],
    });
    await agent.close();
    const id = asked.request as number;
    const from = broker.stdout().length;
    const approved = await runCli(['approve', String(id), '2h', '--config', config], {});
    expect(approved.code).toBe(0);
    const shown = await broker.waitConsole(
      new RegExp(
        `From a shell on the broker's host \\(owner socket\\): broker approve ${id} 2h\\nApproved request ${id}`,
      ),
      from,
    );
    expect(shown.index).toBeGreaterThanOrEqual(0);
    expect((await runCli(['revoke', 'all', '--config', config], {})).code).toBe(0);
    await broker.waitConsole(
      /From a shell on the broker's host \(owner socket\): broker revoke all\n/,
      from,
    );
    // A read-only command is not a decision: nothing is printed for it.
    const before = broker.stdout().length;
    expect((await runCli(['status', '--config', config], {})).code).toBe(0);
    expect((await runCli(['deny', '99', '--config', config], {})).code).toBe(3);
    await broker.waitConsole(/broker deny 99\n/, before);
    expect(broker.stdout().slice(before)).not.toContain('broker status');
  }, 60_000);
});
