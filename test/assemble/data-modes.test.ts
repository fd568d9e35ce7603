/**
 * Issue 14.9: the grant database was created 0644 (its -wal and -shm too) in a 0755
 * ./data, so every local user could read the grants, decisions and reasons. Every data
 * file is now 0600 and the folder 0700, on real files, with the usual umask 022.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../broker/audit/index.js';
import { currentUid, PrivateModeError } from '../../broker/base/private-files.js';
import { memoryLogger } from '../../broker/base/log.js';
import { DATA_FILES, GRANTS_FILE, prepareDataFolder } from '../../broker/data-folder.js';
import { startDemo } from '../../broker/demo/run.js';
import { startBroker, type RunningBroker } from '../../broker/main.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { call, connectMcp } from '../../support/mcp.js';
import { writeBrokerConfig, brokerEnv } from '../../support/processes.js';
import { AGENT_TOKEN, APP_PASSWORD } from '../../support/tokens.js';
import { until } from '../../support/until.js';
import { appendLine } from '../../support/audit-line.js';

const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8);

let umask: number;
let fake: FakeNextcloud;
let dir: string;
let broker: RunningBroker | undefined;
const log: string[] = [];

beforeAll(async () => {
  // Security-relevant default: files are 0644 and folders 0755 unless asked otherwise.
  umask = process.umask(0o022);
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
});
afterAll(async () => {
  await fake.close();
  process.umask(umask);
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'broker-modes-'));
  log.length = 0;
});
afterEach(async () => {
  await broker?.stop();
  broker = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<RunningBroker> {
  const config = writeBrokerConfig(dir, { instances: { personal: fake.url } });
  broker = await startBroker(config, {
    env: brokerEnv(),
    writeLog: (line) => log.push(line),
    stdin: new PassThrough(),
    stdout: new PassThrough(),
  });
  // A request writes to the grant database, so its -wal and -shm are in use.
  const agent = await connectMcp(`${broker.url}/mcp`, AGENT_TOKEN);
  const answer = await call(agent, 'request_access', {
    instance: 'personal',
    reason: 'modes',
    items: [{ path: 'Docs', mode: 'read' }],
  });
  await agent.close();
  expect(answer.status).toBe('pending');
  return broker;
}

describe('attack: another local user reads the grant database', () => {
  it('a new data folder is 0700 and every file the broker keeps in it 0600', async () => {
    await start();
    const data = join(dir, 'data');
    expect(mode(data)).toBe('700');
    // (audit.checkpoint.tmp comes and goes as the checkpoint follows the log.)
    const files = readdirSync(data).filter((n) => !n.endsWith('.tmp'));
    expect(files.sort()).toEqual([...DATA_FILES].sort());
    for (const name of DATA_FILES) expect([name, mode(join(data, name))]).toEqual([name, '600']);
    expect(log.join('')).not.toContain('narrowed');
  });

  it('an older, wider folder and files (0755, 0644) are narrowed on start, each named in the log', async () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    // What an older broker left: SQLite's own 0644, an audit log and checkpoint made wide.
    const old = new Database(join(data, GRANTS_FILE));
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE leftover (x)');
    expect(mode(join(data, `${GRANTS_FILE}-wal`))).toBe('644');
    old.close();
    const audit = await AuditLog.open(data, { now: Date.now });
    await appendLine(audit, 'start', {});
    await audit.close();
    chmodSync(join(data, 'audit.log'), 0o644);
    chmodSync(join(data, 'audit.checkpoint'), 0o644);
    expect(mode(data)).toBe('755');
    expect(mode(join(data, GRANTS_FILE))).toBe('644');

    await start();
    expect(mode(data)).toBe('700');
    for (const name of DATA_FILES) expect([name, mode(join(data, name))]).toEqual([name, '600']);
    const narrowed = log.filter((l) => l.includes('narrowed'));
    for (const path of [data, join(data, GRANTS_FILE), join(data, 'audit.log')]) {
      expect(narrowed.some((l) => l.includes(JSON.stringify(path)))).toBe(true);
    }
  });

  it('a wider folder that belongs to another user is refused with the chmod to run', () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    const someoneElse = (currentUid() ?? 0) + 1;
    const refused = (() => {
      try {
        prepareDataFolder(data, memoryLogger(), someoneElse);
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(PrivateModeError);
    expect(String(refused)).toContain(`run \`chmod 0700 ${data}\` as its owner`);
    expect(mode(data)).toBe('755'); // not ours: left as it is
  });
});

describe('the demo keeps its files private too', () => {
  it('data/demo is 0700 and every file in it (config, tokens, grants, audit) 0600', async () => {
    const stdin = new PassThrough();
    const demo = await startDemo({
      cwd: dir,
      env: {},
      stdin,
      stdout: new PassThrough(),
      stderr: () => undefined,
      startCloud: async (opts) => {
        const cloud = await startFakeNextcloud(opts);
        return { url: cloud.url, close: () => cloud.close() };
      },
      preferredPort: 0,
    });
    try {
      const agent = await connectMcp(demo.mcpUrl, demo.agentToken);
      await call(agent, 'request_access', {
        instance: 'demo',
        reason: 'modes',
        items: [{ path: 'Documents', mode: 'read' }],
      });
      await agent.close();
      const data = join(dir, 'data', 'demo');
      await until('the grant database in WAL mode', () =>
        readdirSync(data).includes(`${GRANTS_FILE}-wal`),
      );
      expect(mode(data)).toBe('700');
      const files = readdirSync(data).filter((n) => !n.endsWith('.tmp'));
      expect(files).toEqual(expect.arrayContaining(['config.yaml', 'tokens.env', ...DATA_FILES]));
      // Folders (the demo's secrets) are 0700, every file in them and beside them 0600.
      const walk = (folder: string): [string, string][] =>
        readdirSync(folder)
          .filter((n) => !n.endsWith('.tmp'))
          .flatMap((n) => {
            const path = join(folder, n);
            return statSync(path).isDirectory()
              ? [[path, mode(path)] as [string, string], ...walk(path)]
              : [[path, mode(path)] as [string, string]];
          });
      const seen = walk(data);
      expect(seen.some(([p]) => p.includes('secrets'))).toBe(true);
      for (const [path, got] of seen) {
        expect([path, got]).toEqual([path, statSync(path).isDirectory() ? '700' : '600']);
      }
    } finally {
      stdin.end();
      await demo.stop();
    }
  });
});
