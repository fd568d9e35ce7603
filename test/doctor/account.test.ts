/**
 * `broker doctor` on the broker's own account (issue 38), against the fake over real
 * sockets: an administrator fails; an account that owns what it reaches is a warning
 * that says what it costs; what it reaches is listed with owner and permissions;
 * reconciliation is said to be off without the Activity app or with reconcile.interval
 * off; the stream is checked to show the broker's own last change; and the doctor's own
 * request ids reach the audit log, through a running broker or directly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit } from '../../broker/audit/index.js';
import type { Check } from '../../broker/doctor/checklist.js';
import { runDoctor, type DoctorReport } from '../../broker/doctor/run.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { APP_PASSWORD } from '../../support/tokens.js';

let fake: FakeNextcloud;
let dir: string;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  await fake.writeFile('Team/plan.txt', 'p');
  await fake.receiveShare('Team', { owner: 'carol' });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'doctor-account-'));
  fake.reset();
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function doctor(
  opts: { url?: string; dataDir?: string; extra?: string[] } = {},
): Promise<DoctorReport> {
  const file = join(dir, 'config.yaml');
  const lines = [
    'tokens: { agent_env: D_AGENT, transfer_env: D_TRANSFER }',
    'approval: console',
    `data_dir: ${opts.dataDir ?? './data'}`,
    'instances:',
    `  personal: { url: "${opts.url ?? fake.url}", username: ${fake.user}, app_password_env: D_NC }`,
    ...(opts.extra ?? []),
  ];
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return runDoctor(file, {
    env: { D_AGENT: 'a'.repeat(40), D_TRANSFER: 't'.repeat(40), D_NC: APP_PASSWORD },
    timeoutMs: 3_000,
  });
}

function checks(report: DoctorReport, title: RegExp): Check[] {
  const found = report.sections.find((s) => title.test(s.title));
  if (found === undefined) throw new Error(`no section ${String(title)}:\n${report.text}`);
  return found.checks;
}

describe('the broker’s account', () => {
  it('an account that reaches only what was shared with it passes, each entry with owner and permissions', async () => {
    const report = await doctor();
    const account = checks(report, /The broker's account/);
    expect(account.map((c) => c.status)).toEqual(['pass', 'pass', 'skip']);
    expect(account[0]?.label).toBe('alice is not an administrator');
    expect(account[1]?.label).toMatch(
      /^reaches Team\/: shared by carol, may read, write, reshare \(S?R?G/,
    );
    // D, N and V there are rights on the mount point, said so (not on the files in it).
    expect(account[1]?.label).toMatch(
      /DNV.*; D, N, V: it may remove, rename or move the share in its own view\)$/,
    );
    // The outer wall against other hosts is the admin's: named, not checked.
    expect(account[2]?.label).toMatch(/Flow rule.*files_accesscontrol/);
    expect(report.exitCode).toBe(0);
  });

  it('an administrator fails: a leak reaches every account of the server', async () => {
    fake.faults.groups = ['admin'];
    const report = await doctor();
    const [admin] = checks(report, /The broker's account/);
    expect(admin).toMatchObject({ status: 'fail' });
    expect(admin?.label).toMatch(/is a Nextcloud administrator/);
    expect(admin?.fix).toMatch(/account for the broker alone/);
    expect(report.exitCode).toBe(2);
  });

  it('an account that owns what it reaches is warned of what that costs', async () => {
    await fake.writeFile('Private/diary.txt', 'mine');
    try {
      const report = await doctor();
      const owned = checks(report, /The broker's account/).find((c) => c.status === 'warn');
      expect(owned?.label).toMatch(/owns 1 of the 2 top-level entries it reaches \(Private\)/);
      expect(owned?.label).toMatch(/cannot be told from the broker's/);
      expect(owned?.label).toMatch(/a leaked app password reaches everything/);
      expect(owned?.fix).toMatch(/share with it only what the agent needs/);
      expect(report.exitCode).toBe(0);
    } finally {
      await fetch(`${fake.url}/remote.php/dav/files/${fake.user}/Private`, {
        method: 'DELETE',
        headers: {
          Authorization: `Basic ${Buffer.from(`${fake.user}:${APP_PASSWORD}`).toString('base64')}`,
        },
      });
    }
  });
});

describe('reconciliation', () => {
  it('is off without the Activity app, and the doctor says why (a warning: the broker works on)', async () => {
    fake.faults.activityApp = false;
    const report = await doctor();
    const [off] = checks(report, /Reconciliation/);
    expect(off).toMatchObject({ status: 'warn' });
    expect(off?.label).toMatch(
      /reconciliation is off for "personal": this Nextcloud has no Activity app/,
    );
    expect(off?.fix).toMatch(/occ app:enable activity/);
    expect(report.exitCode).toBe(0);
  });

  it('reconcile.interval off is a warning naming the command', async () => {
    const report = await doctor({ extra: ['reconcile: { interval: off }'] });
    const interval = checks(report, /Reconciliation/)[1];
    expect(interval).toMatchObject({ status: 'warn' });
    expect(interval?.fix).toMatch(/broker reconcile/);
  });
});

describe('with the broker’s data', () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await startBroker({ persist: true });
    await broker.fake.writeFile('Team/x.txt', 'x');
    await broker.grant([{ path: 'Team', mode: 'write' }]);
    const agent = await broker.agent();
    expect(await call(agent, 'mkdir', { instance: 'personal', path: 'Team/Made' })).toMatchObject({
      status: 'ok',
    });
  });
  afterAll(async () => {
    await broker.close();
  });

  const brokerDoctor = () => doctor({ url: broker.fake.url, dataDir: broker.dir });

  it('the stream is checked to show the broker’s own last change', async () => {
    const report = await brokerDoctor();
    expect(checks(report, /Reconciliation/)[2]).toMatchObject({
      status: 'pass',
      label: expect.stringMatching(
        /shows the broker’s own changes \(its last: mkdir on Team\/Made/,
      ),
    });
  });

  it('the doctor’s request ids go to the audit log through the running broker', async () => {
    const from = broker.fake.requests.length;
    const report = await brokerDoctor();
    expect(checks(report, /The doctor's own requests/)[0]?.label).toMatch(
      /request ids are in the audit log \(through the running broker\)/,
    );
    const shown = broker.fake.requests
      .slice(from)
      .flatMap((r) => (r.requestId === undefined ? [] : [r.requestId]));
    const recorded = broker
      .auditLines()
      .filter((l) => l.event === 'nc_requests' && l.source === 'doctor')
      .flatMap((l) => l.nc_request_ids as string[]);
    expect(shown.length).toBeGreaterThan(3);
    expect(recorded).toEqual(expect.arrayContaining(shown));
  });

  it('with the broker stopped, the doctor writes its ids to the audit log itself', async () => {
    const data = join(dir, 'stopped');
    const log = await AuditLog.open(data, { now: Date.now });
    await log.append({ event: 'start', version: 'test' });
    await log.close();
    const report = await doctor({ dataDir: data });
    expect(checks(report, /The doctor's own requests/)[0]?.label).toMatch(/\(directly\)/);
    const lines = readFileSync(join(data, 'audit.log'), 'utf8').trim().split('\n');
    expect(JSON.parse(lines.at(-1) ?? '{}')).toMatchObject({
      event: 'nc_requests',
      source: 'doctor',
      instance: 'personal',
    });
    expect(verifyAudit(data)).toMatchObject({ ok: true });
  });

  it('without an audit log yet, the doctor says its ids are not recorded, and why', async () => {
    const report = await doctor();
    expect(checks(report, /The doctor's own requests/)[0]).toMatchObject({
      status: 'skip',
      label: expect.stringMatching(/not recorded \(no audit log yet/),
    });
  });
});
