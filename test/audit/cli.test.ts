/** `broker audit verify` (docs/contracts.md §6): one JSON line on stdout, exit 0 / 4 / 1. */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createAuditCommand } from '../../cli/owner/audit.js';
import { commands } from '../../cli/main.js';
import { CLI_MAIN } from '../../support/processes.js';
import { checkpointPath, logPath, readLog, tempDir, writeLog } from './helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const RUNNER = CLI_MAIN;
// The tsx loader by absolute URL, so the child also runs from a cwd outside the repository.
const TSX = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('tsx')).href;

function broker(
  args: string[],
  cwd = ROOT,
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', TSX, RUNNER, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function inProcess(
  args: string[],
  cwd = ROOT,
): { code: number; out: Record<string, unknown>; err: string } {
  let stdout = '';
  let stderr = '';
  const cmd = createAuditCommand({
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    cwd: () => cwd,
  });
  let code = -1;
  void cmd.run(args).then((c) => (code = c));
  return {
    get code() {
      return code;
    },
    get out() {
      expect(stdout.endsWith('\n')).toBe(true);
      expect(stdout.trimEnd().split('\n')).toHaveLength(1);
      return JSON.parse(stdout) as Record<string, unknown>;
    },
    get err() {
      return stderr;
    },
  };
}

async function run(
  args: string[],
  cwd?: string,
): Promise<{ code: number; out: Record<string, unknown>; err: string }> {
  const r = inProcess(args, cwd);
  await new Promise((res) => setImmediate(res));
  return { code: r.code, out: r.out, err: r.err };
}

describe('broker audit verify as a subprocess', () => {
  it('exits 0 with status ok, the record count and the head', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 3);
    const r = broker(['audit', 'verify', '--data-dir', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(r.stdout)).toEqual({
      status: 'ok',
      records: 3,
      head: { seq: 3, hash: recs[2]?.hash },
    });
  });

  it('exits 4 naming the first bad seq when a record was edited', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const text = readLog(dir).toString('utf8').replace('"n":1,', '"n":9,');
    writeFileSync(logPath(dir), text);
    const r = broker(['audit', 'verify', `--data-dir=${dir}`]);
    expect(r.code).toBe(4);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ status: 'corrupt', seq: 2 });
    expect(out.error).toMatch(/hash does not match/);
    expect(out.next_step).toEqual(expect.any(String));
    expect(r.stderr).toMatch(/CORRUPT at seq 2/);
  });

  it('exits 0 on a log written before ASCII lines (raw UTF-8, issue 14.7)', () => {
    const r = broker([
      'audit',
      'verify',
      '--data-dir',
      join(ROOT, 'test/audit/fixtures/raw-utf8-log'),
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', records: 6, head: { seq: 6 } });
  });

  it('finds the log as `audit tail` does: ./config.yaml, $BROKER_CONFIG, the demo', async () => {
    // It used to read ./data whatever the configuration said.
    const cwd = tempDir();
    await writeLog(join(cwd, 'data'), 1);
    await writeLog(join(cwd, 'state'), 2);
    writeFileSync(join(cwd, 'config.yaml'), 'data_dir: state\n');
    const found = broker(['audit', 'verify'], cwd);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({ status: 'ok', records: 2 });

    const other = tempDir();
    await writeLog(join(other, 'kept'), 3);
    writeFileSync(join(other, 'broker.yaml'), 'data_dir: kept\n');
    const named = spawnSync(process.execPath, ['--import', TSX, RUNNER, 'audit', 'verify'], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '', BROKER_CONFIG: join(other, 'broker.yaml') },
    });
    expect(named.status).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ status: 'ok', records: 3 });

    const demo = tempDir();
    mkdirSync(join(demo, 'data', 'demo'), { recursive: true });
    await writeLog(join(demo, 'data', 'demo'), 4);
    writeFileSync(join(demo, 'data', 'demo', 'config.yaml'), 'data_dir: .\n');
    expect(JSON.parse(broker(['audit', 'verify'], demo).stdout)).toMatchObject({ records: 4 });
  });

  it('with no configuration here says how to point at one', async () => {
    const cwd = tempDir();
    await writeLog(join(cwd, 'data'), 1);
    const r = broker(['audit', 'verify'], cwd);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { error: string; next_step: string };
    expect(out.error).toBe(`no config.yaml in ${cwd}, and no demo here (data/demo/config.yaml)`);
    expect(out.next_step).toContain('--config FILE (or BROKER_CONFIG=FILE in the environment)');
    expect(out.next_step).toContain('--data-dir DIR');
  });
});

describe('broker audit verify: outcomes', () => {
  it('is registered in the command table, with help that shows an example', () => {
    const audit = commands.find((c) => c.name === 'audit');
    expect(audit?.help).toMatch(/Usage: broker audit verify \[--config FILE \| --data-dir DIR\]/);
    expect(audit?.help).toMatch(/Examples:\n {2}broker audit verify --data-dir /);
    expect(audit?.help).toMatch(/\n {2}broker audit tail -n 20/);
  });

  it('exit 4 for a truncated tail, a deleted checkpoint and a deleted log', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const lines = readLog(dir).toString('utf8').split('\n');
    writeFileSync(logPath(dir), `${lines.slice(0, 2).join('\n')}\n`);
    expect(await run(['verify', '--data-dir', dir])).toMatchObject({ code: 4, out: { seq: 3 } });
    rmSync(logPath(dir));
    expect(await run(['verify', '--data-dir', dir])).toMatchObject({ code: 4, out: { seq: 1 } });
    await writeLog(join(dir, 'other'), 2);
    rmSync(checkpointPath(join(dir, 'other')));
    expect(await run(['verify', '--data-dir', join(dir, 'other')])).toMatchObject({
      code: 4,
      out: { status: 'corrupt', seq: 2 },
    });
  });

  it('exit 4 for an unrecovered torn tail', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    appendFileSync(logPath(dir), '{"torn');
    expect(await run(['verify', '--data-dir', dir])).toMatchObject({ code: 4, out: { seq: 3 } });
  });

  it('resolves a relative --data-dir against the working directory', async () => {
    const cwd = tempDir();
    await writeLog(join(cwd, 'state'), 1);
    expect(await run(['verify', '--data-dir', 'state'], cwd)).toMatchObject({
      code: 0,
      out: { status: 'ok', records: 1 },
    });
  });
});

describe('broker audit verify --config FILE (like tail and the owner commands)', () => {
  const verify = async (args: string[], cwd: string) => {
    let stdout = '';
    const code = await createAuditCommand({
      stdout: (t) => (stdout += t),
      stderr: () => undefined,
      cwd: () => cwd,
    }).run(['verify', ...args]);
    return { code, out: JSON.parse(stdout) as Record<string, unknown> };
  };

  it("verifies the data_dir the configuration names, relative to the configuration's folder", async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, 'etc'));
    await writeLog(join(cwd, 'etc', 'state'), 2);
    writeFileSync(join(cwd, 'etc', 'config.yaml'), 'data_dir: state\n');
    expect(await verify(['--config', 'etc/config.yaml'], cwd)).toMatchObject({
      code: 0,
      out: { status: 'ok', records: 2 },
    });
  });

  it('refuses --config with --data-dir, and a configuration it cannot read, naming the file', async () => {
    const cwd = tempDir();
    expect(await verify(['--config', 'c.yaml', '--data-dir', 'd'], cwd)).toMatchObject({
      code: 1,
      out: { error: 'give --config or --data-dir, not both' },
    });
    const missing = await verify(['--config', 'nope.yaml'], cwd);
    expect(missing.code).toBe(1);
    expect(String(missing.out['error'])).toContain(join(cwd, 'nope.yaml'));
  });
});

describe('broker audit verify: usage errors exit 1', () => {
  it.each([
    [[], /missing sub-command/],
    [['check'], /unknown sub-command "check"/],
    [['verify', '--data-dir'], /needs a directory/],
    [['verify', '--data-dir='], /needs a directory/],
    [['verify', '--data-dir', 'a', '--data-dir', 'b'], /given twice/],
    [['verify', '--config'], /--config needs a file/],
    [['verify', '--force'], /unknown argument "--force"/],
  ])('%j', async (args, message) => {
    const r = await run(args as string[]);
    expect(r.code).toBe(1);
    expect(r.out).toMatchObject({ status: 'error', error: expect.stringMatching(message) });
    expect(r.out.next_step).toEqual(expect.any(String));
  });

  it('a missing data directory', async () => {
    const r = await run(['verify', '--data-dir', join(tempDir(), 'nope')]);
    expect(r).toMatchObject({ code: 1, out: { error: expect.stringMatching(/does not exist/) } });
  });

  it('a directory without audit files', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'empty'));
    const r = await run(['verify', '--data-dir', join(dir, 'empty')]);
    expect(r).toMatchObject({ code: 1, out: { error: expect.stringMatching(/no audit\.log/) } });
  });
});
