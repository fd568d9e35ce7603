/**
 * Attack: symlinks in data_dir are followed at start (issue "Nothing lost, round four",
 * item 4). The broker narrowed the target of a symlinked `owner.sock` or `audit.log` to
 * 0600 and wrote audit records into it (with the system's password file as the target,
 * run as root). Now a data folder that is a link, or holds one, refuses to start, naming
 * the path, and nothing is opened, narrowed or written through it (`lstat`, and
 * `O_NOFOLLOW` on every file the log and the grant store open). Real files, the daemon
 * as `broker serve` starts it, a victim file standing in for the password file.
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../broker/audit/index.js';
import { checkDataModes } from '../../broker/doctor/local.js';
import { openGrantDatabase } from '../../broker/grants/database.js';
import { startBroker, type RunningBroker } from '../../broker/main.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { brokerEnv, writeBrokerConfig } from '../../support/processes.js';
import { APP_PASSWORD } from '../../support/tokens.js';

let fake: FakeNextcloud;
let dir: string;
let data: string;
let victim: string;
let broker: RunningBroker | undefined;

const VICTIM = 'root:x:0:0:root:/root:/bin/bash\n';
const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8);

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'broker-links-'));
  data = join(dir, 'data');
  victim = join(dir, 'passwd');
  writeFileSync(victim, VICTIM);
  chmodSync(victim, 0o644);
});
afterEach(async () => {
  await broker?.stop();
  broker = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<unknown> {
  const config = writeBrokerConfig(dir, { instances: { personal: fake.url } });
  try {
    broker = await startBroker(config, {
      env: brokerEnv(),
      writeLog: () => undefined,
      stdin: new PassThrough(),
      stdout: new PassThrough(),
    });
    return undefined;
  } catch (error) {
    return error;
  }
}

/** The victim is exactly as it was: its mode and its content. */
function untouched(): void {
  expect(mode(victim)).toBe('644');
  expect(readFileSync(victim, 'utf8')).toBe(VICTIM);
}

describe('attack: a symlink planted in data_dir is followed at start', () => {
  for (const name of [
    'audit.log',
    'owner.sock',
    'audit.checkpoint',
    'grants.db',
    'grants.db-wal',
  ]) {
    it(`${name} → the password file: the broker refuses to start, naming the link; the target keeps its mode and content`, async () => {
      mkdirSync(data, { mode: 0o700 });
      symlinkSync(victim, join(data, name));
      const refused = await start();
      expect(broker).toBeUndefined();
      expect(String(refused)).toContain(`${join(data, name)} is a symlink`);
      expect(String(refused)).toContain('never follows one in its data folder');
      untouched();
      expect(lstatSync(join(data, name)).isSymbolicLink()).toBe(true);
    });
  }

  it('data_dir itself a symlink: refused, naming it, with what to set instead', async () => {
    const real = join(dir, 'elsewhere');
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, data);
    const refused = await start();
    expect(broker).toBeUndefined();
    expect(String(refused)).toContain(`${data} is a symlink`);
    expect(String(refused)).toContain('set data_dir to the real folder');
  });

  it('a link left in the folder under any other name is refused as well', async () => {
    mkdirSync(data, { mode: 0o700 });
    symlinkSync(victim, join(data, 'audit.checkpoint.tmp'));
    expect(String(await start())).toContain('audit.checkpoint.tmp is a symlink');
    untouched();
  });
});

describe('the files themselves are never opened through a link (O_NOFOLLOW)', () => {
  it('the audit log refuses a link at audit.log even when nothing checked the folder first', async () => {
    mkdirSync(data, { mode: 0o700 });
    symlinkSync(victim, join(data, 'audit.log'));
    await expect(AuditLog.open(data, { now: Date.now })).rejects.toMatchObject({ code: 'ELOOP' });
    untouched();
  });

  it('the grant store refuses a link at grants.db', () => {
    mkdirSync(data, { mode: 0o700 });
    symlinkSync(victim, join(data, 'grants.db'));
    expect(() => openGrantDatabase(join(data, 'grants.db'), { now: Date.now })).toThrow(/ELOOP/);
    untouched();
  });
});

describe('broker doctor names the link before the broker refuses it', () => {
  it('a link at owner.sock: the data modes check fails, naming it, with the fix', () => {
    mkdirSync(data, { mode: 0o700 });
    symlinkSync(victim, join(data, 'owner.sock'));
    const check = checkDataModes(data);
    expect(check.status).toBe('fail');
    expect(check.label).toContain(`${join(data, 'owner.sock')} is a symlink`);
    expect(check.fix).toMatch(/^remove the link/);
    untouched();
  });
});
