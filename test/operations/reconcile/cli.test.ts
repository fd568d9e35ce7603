/**
 * `broker reconcile` as the owner runs it, a real subprocess each time: with the broker
 * stopped it reads Nextcloud and the log itself (and moves the one cursor); with the
 * broker running it asks it over the owner socket. Exit 0 everything explained, 1 bad
 * usage, 2 Nextcloud unreachable, 4 unexplained changes (docs/contracts.md §6).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../../fakes/nextcloud.js';
import {
  brokerEnv,
  runCli,
  spawnBroker,
  writeBrokerConfig,
  type BrokerChild,
} from '../../../support/processes.js';
import { APP_PASSWORD } from '../../../support/tokens.js';

let fake: FakeNextcloud;
let dir: string;
let config: string;

async function direct(method: string, path: string, body?: string): Promise<number> {
  const res = await fetch(`${fake.url}/remote.php/dav/files/${fake.user}/${path}`, {
    method,
    headers: {
      Authorization: `Basic ${Buffer.from(`${fake.user}:${APP_PASSWORD}`).toString('base64')}`,
    },
    ...(body === undefined ? {} : { body }),
  });
  await res.arrayBuffer();
  return res.status;
}

const reconcile = (...args: string[]) =>
  runCli(['reconcile', '--config', config, ...args], brokerEnv() as Record<string, string>);

const auditEvents = (): Record<string, unknown>[] =>
  readFileSync(join(dir, 'data', 'audit.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  await fake.writeFile('W/a.txt', 'a');
  dir = mkdtempSync(join(tmpdir(), 'reconcile-cli-'));
  config = writeBrokerConfig(dir, {
    instances: { personal: fake.url },
    extra: ['reconcile: { interval: off }'],
  });
});
afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('with the broker stopped', () => {
  it('the first run sets the cursor; a direct change after it is unexplained, exit 4', async () => {
    const first = await reconcile('--json');
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({ status: 'ok', reports: [{ status: 'started' }] });
    expect(await direct('PUT', 'W/a.txt', 'changed outside')).toBe(204);
    const second = await reconcile('--json');
    expect(second.code).toBe(4);
    expect(second.json).toMatchObject({
      status: 'unexplained',
      reports: [{ instance: 'personal', unexplained: [{ type: 'file_changed', path: 'W/a.txt' }] }],
    });
    // Audited, with the ids of its own requests.
    expect(auditEvents().findLast((e) => e.event === 'reconcile')).toMatchObject({
      trigger: 'command',
      unexplained: 1,
      nc_request_ids: expect.arrayContaining([expect.any(String)]),
    });
    // The cursor moved: the same change is not reported twice.
    expect((await reconcile()).code).toBe(0);
  });

  it('--admin-audit: a direct read is unexplained; --since looks back without moving the cursor', async () => {
    expect(await direct('GET', 'W/a.txt')).toBe(200);
    const file = join(dir, 'admin-audit.log');
    writeFileSync(file, fake.adminAudit());
    const run = await reconcile('--since', '1h', '--admin-audit', file);
    expect(run.code).toBe(4);
    expect(run.stdout).toMatch(/unexplained .* file_changed {2}W\/a\.txt/);
    expect(run.stdout).toMatch(
      /unexplained .* GET {2}File with id "\d+" accessed: "\/alice\/files\/W\/a\.txt"/,
    );
    expect((await reconcile()).code).toBe(0);
  });

  it('refuses a --since it cannot read (exit 1), and says when Nextcloud does not answer (exit 2)', async () => {
    const bad = await reconcile('--since', 'yesterday', '--json');
    expect(bad.code).toBe(1);
    expect(bad.json).toMatchObject({ status: 'failed', error: expect.stringMatching(/--since/) });
    fake.faults.down = true;
    try {
      const down = await reconcile('--json');
      expect(down.code).toBe(2);
      expect(down.json).toMatchObject({ reports: [{ status: 'unreachable' }] });
    } finally {
      fake.faults.down = false;
    }
  });
});

describe('with the broker running', () => {
  let broker: BrokerChild;
  beforeAll(async () => {
    broker = await spawnBroker(config, { env: brokerEnv() });
  });
  afterAll(async () => {
    await broker.stop();
  });

  it('asks it over the owner socket: its cursor, its audit line', async () => {
    expect((await reconcile()).code).toBe(0);
    expect(await direct('DELETE', 'W/a.txt')).toBe(204);
    const run = await reconcile('--json');
    expect(run.code).toBe(4);
    expect(run.json).toMatchObject({
      reports: [{ unexplained: [{ type: 'file_deleted', path: 'W/a.txt' }] }],
    });
    expect((await reconcile()).code).toBe(0);
  });
});
