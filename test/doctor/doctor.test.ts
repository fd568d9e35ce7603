/**
 * `broker doctor` against the fake Nextcloud and the fake Matrix homeserver over real
 * sockets: all green on a good setup; each broken piece of the outside world shows ✗
 * with its fix (exit 2); a bad configuration exits 1; secrets never appear.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../broker/audit/index.js';
import type { Check, CheckSection } from '../../broker/doctor/checklist.js';
import { checkDataModes } from '../../broker/doctor/local.js';
import { runDoctor, type DoctorReport } from '../../broker/doctor/run.js';
import { createDoctorCommand } from '../../cli/owner/doctor.js';
import { startFakeHomeserver, type FakeHomeserver, type RoomSpec } from '../../fakes/homeserver.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { appendLine } from '../../support/audit-line.js';

const AGENT = 'doctor-agent-token-0123456789abcdef-0123456789';
const TRANSFER = 'doctor-transfer-token-0123456789abcdef-012345';
const APP_PASSWORD = 'Doctor-AppPassword-5f2e9a7c1b';
const BOT = '@broker:hs.test';
const OWNER = '@owner:hs.test';
const BOT_TOKEN = 'doctor-bot-access-token-0123456789abcdef';
const SECRETS = [AGENT, TRANSFER, APP_PASSWORD, BOT_TOKEN];

let fake: FakeNextcloud;
let hs: FakeHomeserver;
let dir: string;
let roomCount = 0;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  await fake.writeFile('Documents/a.txt', 'a\n');
  hs = await startFakeHomeserver({
    users: { [BOT]: BOT_TOKEN, [OWNER]: 'owner-token-0123456789abcdef0123' },
  });
});
afterAll(async () => {
  await fake.close();
  await hs.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'broker-doctor-'));
  fake.reset();
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh room per test (the fake cannot change membership rules after the fact). */
function room(spec: Partial<RoomSpec> = {}): string {
  roomCount += 1;
  const id = `!room${roomCount}:hs.test`;
  hs.createRoom({ id, members: [OWNER, BOT], ...spec });
  return id;
}

interface Setup {
  url?: string;
  password?: string;
  approval?: 'matrix' | 'console';
  roomId?: string;
  botToken?: string;
  dataDir?: string;
  extra?: string[];
  /** The instance's `retention` declaration, as inline YAML. */
  retention?: string;
}

function writeConfig(s: Setup = {}): string {
  const file = join(dir, 'config.yaml');
  const lines = [
    'tokens: { agent_env: D_AGENT, transfer_env: D_TRANSFER }',
    `approval: ${s.approval ?? 'matrix'}`,
    `data_dir: ${s.dataDir ?? './data'}`,
    'instances:',
    `  personal: { url: "${s.url ?? fake.url}", username: ${fake.user}, app_password_env: D_NC${s.retention === undefined ? '' : `, retention: ${s.retention}`} }`,
    ...(s.extra ?? []),
  ];
  if ((s.approval ?? 'matrix') === 'matrix') {
    lines.push(
      'matrix:',
      `  homeserver: "${hs.url}"`,
      `  bot_user: "${BOT}"`,
      '  bot_token_env: D_BOT',
      `  room_id: "${s.roomId ?? room()}"`,
      `  approver: "${OWNER}"`,
    );
  }
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return file;
}

function env(s: Setup = {}): NodeJS.ProcessEnv {
  return {
    D_AGENT: AGENT,
    D_TRANSFER: TRANSFER,
    D_NC: s.password ?? APP_PASSWORD,
    D_BOT: s.botToken ?? BOT_TOKEN,
  };
}

async function doctor(s: Setup = {}): Promise<DoctorReport> {
  const report = await runDoctor(writeConfig(s), { env: env(s), timeoutMs: 3_000 });
  for (const secret of SECRETS) expect(report.text).not.toContain(secret);
  return report;
}

function section(report: DoctorReport, title: RegExp): CheckSection {
  const found = report.sections.find((s) => title.test(s.title));
  if (found === undefined) throw new Error(`no section ${String(title)}:\n${report.text}`);
  return found;
}

function only(report: DoctorReport, status: Check['status']): Check[] {
  return report.sections.flatMap((s) => s.checks).filter((c) => c.status === status);
}

/** A port nothing listens on (bound, then released). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

const authenticated = (): number =>
  fake.requests.filter((r) => r.headers.authorization !== undefined).length;

describe('a good setup', () => {
  it('is all green with approval: matrix, exit 0', async () => {
    const report = await doctor();
    expect(only(report, 'fail'), report.text).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.text).toContain('All checks passed.');
    const nc = section(report, /Nextcloud instance "personal"/).checks;
    expect(nc.map((c) => c.status)).toEqual([
      'pass',
      'pass',
      'pass',
      'pass',
      'pass',
      'pass',
      'pass',
    ]);
    expect(nc[0]?.label).toContain('Nextcloud 34.0.1');
    const mx = section(report, /Matrix/).checks;
    expect(mx.map((c) => c.status)).toEqual(['pass', 'pass', 'pass', 'pass', 'pass']);
    // The loopback http URLs are allowed with a warning, shown as such.
    expect(only(report, 'warn').some((c) => c.label.includes('plain http'))).toBe(true);
    expect(report.text).toMatch(/✓ credentials accepted/);
  });

  it('approval: console skips the Matrix checks', async () => {
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode, report.text).toBe(0);
    expect(report.sections.some((s) => /Matrix/.test(s.title))).toBe(false);
    expect(report.text).toContain('no Matrix checks');
  });

  it('approval: console with a matrix section kept for later: no warning about it, its token not needed', async () => {
    const file = writeConfig({
      approval: 'console',
      extra: [
        'matrix:',
        '  homeserver: "http://matrix.example.org"',
        `  bot_user: "${BOT}"`,
        '  bot_token_env: D_UNSET_BOT_TOKEN',
        '  room_id: "!kept:example.org"',
        `  approver: "${OWNER}"`,
      ],
    });
    const report = await runDoctor(file, { env: env(), timeoutMs: 2_000 });
    expect(report.exitCode).toBe(0);
    expect(report.text).not.toContain('matrix.homeserver');
    expect(report.text).not.toContain('D_UNSET_BOT_TOKEN');
    expect(only(report, 'warn').filter((c) => /matrix/i.test(c.label))).toEqual([]);
  });

  it('verifies an existing audit log and says so', async () => {
    const log = await AuditLog.open(join(dir, 'data'), { now: Date.now });
    await appendLine(log, 'start', {});
    await appendLine(log, 'stop', {});
    await log.close();
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(0);
    expect(report.text).toContain('✓ audit log intact: 2 records, head seq 2');
  });
});

describe('Nextcloud problems (exit 2, ✗ with the fix)', () => {
  it('trash bin off', async () => {
    fake.faults.trashbin = false;
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(2);
    const [bad] = only(report, 'fail');
    expect(bad?.label).toContain('trash bin off');
    expect(bad?.fix).toContain('files_trashbin');
    expect(report.text).toMatch(/✗ trash bin off[^\n]*\n\s+fix: +enable the Deleted files app/);
    expect(only(report, 'fail')).toHaveLength(1);
  });

  it('a quota: Nextcloud may expire the trash bin and versions; a warning with the settings to set', async () => {
    fake.setQuota(120_000_000);
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(0);
    const [warning] = only(report, 'warn').filter((c) => c.label.includes('quota'));
    expect(warning?.label).toContain('has a quota of 120.0 MB');
    expect(warning?.label).toContain('insufficient_space');
    // The versions' size is invisible to the broker: the one setting that keeps them.
    expect(warning?.label).toContain(
      "cannot see the versions' size, so only versions_retention_obligation 'disabled' keeps them",
    );
    expect(warning?.fix).toContain("'trashbin_retention_obligation' => '30, 30'");
    expect(warning?.fix).toContain("'versions_retention_obligation' => 'disabled'");
  });

  it('the retention declaration: unset, one that keeps young trash and versions, and one that does not', async () => {
    /** The doctor's check of the declaration, with `retention` as inline YAML (or none). */
    const declaration = async (retention?: string): Promise<Check | undefined> =>
      (
        await doctor({ approval: 'console', ...(retention === undefined ? {} : { retention }) })
      ).sections
        .flatMap((s) => s.checks)
        .find((c) => c.label.includes('instances.personal.retention'));
    const unset = await declaration();
    expect(unset?.status).toBe('pass');
    expect(unset?.label).toContain('refuses every write into a folder another user shared');
    expect(unset?.label).toContain("'versions_retention_obligation' => 'disabled'");
    const keeps = await declaration(
      '{ trashbin_retention_obligation: "30, 60", versions_retention_obligation: disabled }',
    );
    expect(keeps?.status).toBe('pass');
    expect(keeps?.label).toContain(
      'writes into folders other users shared even when they have a quota',
    );
    const auto = await declaration(
      '{ trashbin_retention_obligation: "30, auto", versions_retention_obligation: "30, 60" }',
    );
    expect(auto?.status).toBe('warn');
    expect(auto?.label).toContain(
      "trashbin_retention_obligation '30, auto' lets it delete any trash bin item",
    );
    expect(auto?.label).toContain(
      "versions_retention_obligation '30, 60' lets it delete old versions",
    );
    expect(auto?.fix).toContain("'versions_retention_obligation' => 'disabled'");
  });

  it('versions off: undo cannot put back a replaced file; a warning naming the app', async () => {
    fake.faults.versions = false;
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(0);
    const [warning] = only(report, 'warn').filter((c) => c.label.includes('undo'));
    expect(warning?.label).toContain('the Versions app is off');
    expect(warning?.label).toContain('cannot put back a file the agent overwrote');
    expect(warning?.fix).toContain('files_versions');
  });

  it('versions and the trash bin on: undo can work, and is surest soon after', async () => {
    const report = await doctor({ approval: 'console' });
    const undo = section(report, /Nextcloud/).checks.find((c) => c.label.includes('undo'));
    expect(undo).toMatchObject({ status: 'pass' });
    expect(undo?.label).toContain('soon after');
  });

  it('files_lock off', async () => {
    fake.faults.filesLock = false;
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(2);
    const fails = only(report, 'fail');
    expect(fails).toHaveLength(1);
    expect(fails[0]?.label).toContain('file locking off');
    expect(fails[0]?.fix).toContain('files_lock');
  });

  it('wrong app password: exactly one authenticated request, never retried', async () => {
    const report = await doctor({ approval: 'console', password: 'not-the-app-password' });
    expect(report.exitCode).toBe(2);
    const nc = section(report, /Nextcloud/).checks;
    expect(nc.map((c) => c.status)).toEqual(['pass', 'fail', 'skip', 'skip', 'skip']);
    expect(nc[1]?.fix).toContain('app password');
    expect(nc[1]?.fix).toContain('instances.personal.app_password');
    expect(authenticated()).toBe(1);
    expect(report.text).not.toContain('not-the-app-password');
  });

  it('unreachable server: names the URL key, the rest not checked', async () => {
    const port = await freePort();
    const report = await doctor({ approval: 'console', url: `http://127.0.0.1:${port}` });
    expect(report.exitCode).toBe(2);
    const nc = section(report, /Nextcloud/).checks;
    expect(nc.map((c) => c.status)).toEqual(['fail', 'skip', 'skip', 'skip', 'skip']);
    expect(nc[0]?.label).toContain('not reachable');
    expect(nc[0]?.detail).toBe('ECONNREFUSED');
    expect(nc[0]?.fix).toContain('instances.personal.url');
  });

  it('a server that drops connections counts as unreachable, without credentials sent', async () => {
    fake.faults.down = true;
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(2);
    expect(section(report, /Nextcloud/).checks[0]?.status).toBe('fail');
    expect(authenticated()).toBe(0);
  });

  it('a URL that is not a Nextcloud (wrong folder): status.php 404', async () => {
    const report = await doctor({ approval: 'console', url: `${fake.url}/nextcloud` });
    const first = section(report, /Nextcloud/).checks[0];
    expect(first?.status).toBe('fail');
    expect(first?.detail).toBe('status.php answered HTTP 404');
    expect(first?.fix).toContain('including its folder');
    expect(authenticated()).toBe(0);
  });

  it('throttled logins (429) are reported with what to do', async () => {
    const throttled = await startFakeNextcloud({ password: APP_PASSWORD, throttleAtFailure: 1 });
    try {
      await fetch(`${throttled.url}/remote.php/dav/files/${throttled.user}/`, {
        method: 'PROPFIND',
        headers: { authorization: `Basic ${Buffer.from('alice:wrong').toString('base64')}` },
      });
      const report = await doctor({ approval: 'console', url: throttled.url });
      const nc = section(report, /Nextcloud/).checks;
      expect(nc.map((c) => c.status)).toEqual(['fail', 'skip', 'skip', 'skip', 'skip']);
      expect(nc[0]?.label).toContain('throttling');
      expect(nc[0]?.detail).toBe('status.php answered HTTP 429');
      expect(nc[0]?.fix).toContain('wait');
      // Nothing more is sent while throttled, least of all the credentials.
      expect(throttled.requests.filter((r) => r.headers.authorization !== undefined)).toHaveLength(
        1,
      );
    } finally {
      await throttled.close();
    }
  });
});

describe('Matrix room problems (exit 2, ✗ on the failing step)', () => {
  const matrixChecks = async (s: Setup): Promise<Check[]> => {
    const report = await doctor(s);
    expect(report.exitCode).toBe(2);
    return section(report, /Matrix/).checks;
  };

  it('wrong bot token', async () => {
    const checks = await matrixChecks({ botToken: 'not-the-bot-token-0123456789abcdef' });
    expect(checks.map((c) => c.status)).toEqual(['fail', 'skip', 'skip', 'skip', 'skip']);
    expect(checks[0]?.fix).toContain('new access token');
  });

  it('bot not joined', async () => {
    const checks = await matrixChecks({ roomId: room({ members: [OWNER], invited: [BOT] }) });
    expect(checks.map((c) => c.status)).toEqual(['pass', 'fail', 'skip', 'skip', 'skip']);
    expect(checks[1]?.fix).toContain('invite the bot');
  });

  it('approver not a member', async () => {
    const checks = await matrixChecks({ roomId: room({ members: [BOT] }) });
    expect(checks.map((c) => c.status)).toEqual(['pass', 'pass', 'fail', 'skip', 'skip']);
    expect(checks[2]?.fix).toContain('invite them');
  });

  it('encrypted room', async () => {
    const checks = await matrixChecks({ roomId: room({ encrypted: true }) });
    expect(checks.map((c) => c.status)).toEqual(['pass', 'pass', 'pass', 'fail', 'skip']);
    expect(checks[3]?.fix).toContain('unencrypted invite-only room');
  });

  it('public room', async () => {
    const checks = await matrixChecks({ roomId: room({ joinRule: 'public' }) });
    expect(checks.map((c) => c.status)).toEqual(['pass', 'pass', 'pass', 'pass', 'fail']);
    expect(checks[4]?.detail).toContain('"public"');
  });

  it('homeserver down', async () => {
    await hs.outage(true, '502');
    try {
      const checks = await matrixChecks({});
      expect(checks[0]?.status).toBe('fail');
      expect(checks[0]?.fix).toContain('check matrix.homeserver');
    } finally {
      await hs.outage(false);
    }
  });

  it('homeserver not listening at all', async () => {
    const port = await freePort();
    const file = writeConfig({});
    writeFileSync(file, readFileSync(file, 'utf8').replace(hs.url, `http://127.0.0.1:${port}`));
    const report = await runDoctor(file, { env: env(), timeoutMs: 3_000 });
    const checks = section(report, /Matrix/).checks;
    expect(checks.map((c) => c.status)).toEqual(['fail', 'skip', 'skip', 'skip', 'skip']);
    expect(checks[0]?.detail).toContain('cannot reach the Matrix homeserver');
  });

  it('other members are a warning, not a failure', async () => {
    const report = await doctor({ roomId: room({ members: [OWNER, BOT, '@eve:hs.test'] }) });
    expect(report.exitCode).toBe(0);
    expect(report.text).toMatch(/! other members can read every request[^\n]*@eve:hs\.test/);
  });
});

describe('local state problems', () => {
  it('data_dir that is a file', async () => {
    writeFileSync(join(dir, 'afile'), 'x');
    const report = await doctor({ approval: 'console', dataDir: './afile' });
    expect(report.exitCode).toBe(2);
    expect(only(report, 'fail')[0]?.label).toContain('is not a folder');
  });

  it('a missing data_dir the broker can create is fine', async () => {
    const report = await doctor({ approval: 'console', dataDir: './not/yet' });
    expect(report.exitCode).toBe(0);
    expect(report.text).toContain('does not exist yet; the broker will create it');
  });

  it('a tampered audit log is ✗ naming the seq', async () => {
    const data = join(dir, 'data');
    const log = await AuditLog.open(data, { now: Date.now });
    await appendLine(log, 'start', {});
    await appendLine(log, 'request', { reason: 'hello' });
    await log.close();
    const file = join(data, 'audit.log');
    writeFileSync(file, readFileSync(file, 'utf8').replace('hello', 'hellO'));
    const report = await doctor({ approval: 'console' });
    expect(report.exitCode).toBe(2);
    const bad = only(report, 'fail')[0];
    expect(bad?.label).toBe('audit log broken at seq 2');
    expect(bad?.fix).toContain('broker audit verify');
  });
});

describe('data folder modes (issue 14.9)', () => {
  it('names every wider data folder and file with the chmod that fixes it', async () => {
    const data = join(dir, 'data');
    const log = await AuditLog.open(data, { now: Date.now });
    await appendLine(log, 'start', {});
    await log.close();
    chmodSync(data, 0o755);
    chmodSync(join(data, 'audit.log'), 0o644);
    writeFileSync(join(data, 'grants.db'), '', { mode: 0o600 });
    chmodSync(join(data, 'grants.db'), 0o640);
    const report = await doctor({ approval: 'console' });
    const check = section(report, /Local state/).checks.find((c) =>
      c.label.startsWith('other users can read'),
    );
    // Ours: the broker narrows them when it starts, so a warning with the fix.
    expect(check?.status).toBe('warn');
    expect(check?.label).toContain(`${data} 0755`);
    expect(check?.label).toContain(`${join(data, 'audit.log')} 0644`);
    expect(check?.label).toContain(`${join(data, 'grants.db')} 0640`);
    expect(check?.label).not.toContain('audit.checkpoint');
    expect(check?.fix).toContain(
      `chmod 0700 ${data} && chmod 0600 ${join(data, 'grants.db')} ${join(data, 'audit.log')}`,
    );
    expect(report.text).toContain('! other users can read');
  });

  it('is ✗ when a wider one belongs to another user (the broker would refuse to start)', () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o700 });
    writeFileSync(join(data, 'audit.log'), '', { mode: 0o600 });
    chmodSync(join(data, 'audit.log'), 0o604);
    const check = checkDataModes(data, (process.getuid?.() ?? 0) + 1);
    expect(check.status).toBe('fail');
    expect(check.detail).toContain(`${join(data, 'audit.log')} belongs to uid`);
    expect(check.fix).toContain(`as their owner run: chmod 0600 ${join(data, 'audit.log')}`);
  });

  it('a private folder passes', async () => {
    const log = await AuditLog.open(join(dir, 'data'), { now: Date.now });
    await log.close();
    const report = await doctor({ approval: 'console' });
    expect(report.text).toContain("and the broker's files in it are private (0700, 0600)");
  });
});

describe('configuration problems (exit 1)', () => {
  it('a missing file', async () => {
    const report = await runDoctor(join(dir, 'nope.yaml'), { env: {} });
    expect(report.exitCode).toBe(1);
    expect(report.text).toMatch(/✗ .*nope\.yaml/);
    expect(report.text).toContain('config.yaml.example');
  });

  it('a bad key names it; no network request is made', async () => {
    mkdirSync(join(dir, 'x'));
    const file = writeConfig({ approval: 'console', extra: ['server: { port: eighty }'] });
    const report = await runDoctor(file, { env: env() });
    expect(report.exitCode).toBe(1);
    expect(report.text).toContain('✗ server.port');
    expect(fake.requests).toHaveLength(0);
  });

  it('a secret variable that is unset is named, its value never shown', async () => {
    const file = writeConfig({ approval: 'console' });
    const report = await runDoctor(file, { env: { ...env(), D_NC: undefined } });
    expect(report.exitCode).toBe(1);
    expect(report.text).toContain('D_NC');
  });
});

describe('broker doctor (command)', () => {
  it('prints the checklist on stdout and exits with the report code', async () => {
    fake.faults.filesLock = false;
    const file = writeConfig({ approval: 'console' });
    let out = '';
    let err = '';
    const command = createDoctorCommand({
      env: { ...env(), BROKER_CONFIG: undefined },
      cwd: () => dir,
      stdout: (t) => (out += t),
      stderr: (t) => (err += t),
    });
    expect(await command.run(['--config', file])).toBe(2);
    expect(out).toContain('✗ file locking off');
    expect(out).toContain('1 check failed');
    expect(err).toBe('');
    // ./config.yaml is the default.
    fake.faults.filesLock = true;
    out = '';
    expect(await command.run([])).toBe(0);
    expect(out).toContain('All checks passed.');
    expect(await command.run(['--verbose'])).toBe(1);
    expect(err).toContain('unknown argument');
  });
});
