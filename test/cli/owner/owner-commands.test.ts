/**
 * The owner's commands (`broker approve|deny|revoke|status|grants`, `broker audit tail`)
 * against a real owner socket on a real engine, store and audit log; the config names
 * only data_dir's folder and secrets the second shell does not have.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OwnerSocket } from '../../../broker/approval/owner/server.js';
import { memoryLogger } from '../../../broker/base/log.js';
import { runAuditTail } from '../../../cli/owner/audit-tail.js';
import { createOwnerCommands } from '../../../cli/owner/owner.js';
import { fit } from '../../../cli/owner/owner-table.js';
import type { Command } from '../../../cli/command.js';
import { harness, H, LIFECYCLE, type Harness } from '../../../support/approval.js';
import { until } from '../../../support/until.js';

let h: Harness;
let socket: OwnerSocket;
let cwd: string;
let out: string;
let err: string;
let commands: Command[];

const io = () => ({
  env: {},
  cwd: () => cwd,
  stdout: (t: string) => void (out += t),
  stderr: (t: string) => void (err += t),
});

async function broker(...args: string[]): Promise<number> {
  out = '';
  err = '';
  const [name, ...rest] = args;
  const command = commands.find((c) => c.name === name);
  if (command === undefined) throw new Error(`no command ${String(name)}`);
  return command.run(rest);
}

beforeEach(async () => {
  h = await harness({ channel: 'console' });
  socket = new OwnerSocket({
    dir: h.dir,
    engine: h.engine,
    store: h.store,
    now: () => h.clock.now,
    pendingTimeout: LIFECYCLE.pending_timeout,
    logger: memoryLogger(),
    lastUsed: (id) => (id === 1 ? h.clock.now - 5 * 60_000 : undefined),
  });
  cwd = mkdtempSync(join(tmpdir(), 'owner-cli-'));
  // The owner's shell has none of the secrets: only data_dir is read.
  writeFileSync(
    join(cwd, 'config.yaml'),
    `approval: console\ndata_dir: ${h.dir}\ntokens: { agent_env: UNSET_AGENT, transfer_env: UNSET_T }\n`,
  );
  commands = createOwnerCommands({ ...io(), now: () => h.clock.now });
});

afterEach(async () => {
  await socket.stop();
  await h.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe('owner commands', () => {
  it('no broker running: exit 2 naming the data folder and `broker serve`', async () => {
    expect(await broker('grants')).toBe(2);
    expect(err).toContain(`no broker is running for data folder ${h.dir}`);
    expect(err).toContain('start it with `broker serve`');
    expect(out).toBe('');
    expect(await broker('status', '--json')).toBe(2);
    expect(JSON.parse(out)).toMatchObject({ status: 'failed', next_step: expect.any(String) });
  });

  it('approve, deny, revoke from a second shell; exit 3 when refused', async () => {
    await socket.start();
    const n = h.request([
      ['Docs', 'read'],
      ['Notes', 'write'],
    ]);
    const m = h.request([['Photos', 'read']]);
    expect(await broker('approve', String(n), '1,2', '2h')).toBe(0);
    expect(out).toContain(`Approved request ${n} until`);
    expect(await broker('deny', String(m), '--json')).toBe(0);
    expect(JSON.parse(out)).toMatchObject({
      status: 'ok',
      message: `Denied request ${m}; nothing was granted.`,
    });
    expect(await broker('deny', String(m))).toBe(3);
    expect(out).toContain('already decided');
    expect(await broker('revoke', String(n), '--json')).toBe(0);
    expect(JSON.parse(out)).toMatchObject({
      status: 'ok',
      revoked: [{ request: n }, { request: n }],
    });
    expect(h.store.activeGrants()).toEqual([]);
    expect(
      h
        .records()
        .filter((r) => r.actor === 'socket')
        .map((r) => r.event),
    ).toEqual(['decision', 'decision', 'decision', 'revoke']);
  });

  it('usage errors exit 1 and reach no broker', async () => {
    await socket.start();
    expect(await broker('approve')).toBe(1);
    expect(err).toContain('usage: broker approve N [ITEMS] [DURATION]');
    expect(await broker('approve', '1', 'x')).toBe(1);
    expect(err).toContain('expiry');
    // Words the broker's parser refuses: said once, with this command's --help (not the
    // console's "help", not another command's).
    expect(await broker('deny', 'abc')).toBe(1);
    expect(err).toBe(
      'broker deny: the request number must be a number (got "abc")\n  next: run `broker deny --help`\n',
    );
    expect(h.records().filter((r) => r.event === 'decision')).toEqual([]);
  });

  it('grants: a table in 80 columns with expiry and last use; --json the same grants', async () => {
    await socket.start();
    const long = `Projects/${'very-long-folder-name/'.repeat(4)}report.md`;
    const n = h.request([
      ['Docs', 'read'],
      [long, 'write'],
    ]);
    expect(await broker('approve', String(n), '3h')).toBe(0);
    expect(await broker('grants')).toBe(0);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^REQ +INSTANCE +PATH +MODE +EXPIRES IN +USED LAST$/);
    expect(lines[1]).toMatch(new RegExp(`^${n} +personal +Docs +read +3h +5m ago$`));
    expect(lines[2]).toMatch(/ Projects\/very-.*….*report\.md /);
    expect(lines[2]).toMatch(/write +3h +–$/);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(80);
    expect(await broker('grants', '--json')).toBe(0);
    const grants = (JSON.parse(out) as { grants: { path: string; expires_in_ms: number }[] })
      .grants;
    expect(grants.map((g) => [g.path, g.expires_in_ms])).toEqual([
      ['Docs', 3 * H],
      [long, 3 * H],
    ]);
  });

  it('status shows what the console shows', async () => {
    await socket.start();
    h.request([['Docs', 'read']]);
    expect(await broker('status')).toBe(0);
    expect(out).toContain('No active grants.');
    expect(out).toContain('Pending requests (1):');
  });

  it('show N: the request in full, as the console shows it; exit 3 for none; nothing audited', async () => {
    await socket.start();
    const n = h.request([
      ['Docs', 'read'],
      ['Notes', 'write'],
    ]);
    expect(await broker('show', String(n))).toBe(0);
    expect(out).toContain(`Request ${n}`);
    expect(out).toMatch(/read .*Docs/);
    expect(out).toMatch(/write .*Notes/);
    expect(await broker('show', String(n), '--json')).toBe(0);
    expect(JSON.parse(out)).toMatchObject({
      status: 'ok',
      message: expect.stringContaining('Notes'),
    });
    expect(await broker('show', '99')).toBe(3);
    expect(out).toContain('There is no request 99');
    expect(await broker('show')).toBe(1);
    expect(err).toContain('usage: broker show N');
    expect(h.records().filter((r) => r.actor === 'socket')).toEqual([]);
  });

  it('the hint after a refusal names a command the shell has: `show N`', async () => {
    await socket.start();
    const m = h.request([['Photos', 'read']]);
    expect(await broker('deny', String(m))).toBe(0);
    expect(await broker('deny', String(m))).toBe(3);
    expect(out).toContain(`Type "show ${m}"`);
    expect(await broker('show', String(m))).toBe(0);
    expect(out).toContain('Photos');
  });

  it('from a folder without a configuration: says how to point at one', async () => {
    await socket.start();
    const home = cwd;
    cwd = mkdtempSync(join(tmpdir(), 'owner-cli-elsewhere-'));
    try {
      expect(await broker('status')).toBe(1);
      expect(err).toContain(`no config.yaml in ${cwd}`);
      expect(err).toContain('--config FILE (or BROKER_CONFIG=FILE in the environment)');
      expect(await broker('status', '--config', join(home, 'config.yaml'))).toBe(0);
      expect(await broker('grants', '--config', 'nope.yaml', '--json')).toBe(1);
      expect(JSON.parse(out)).toMatchObject({
        error: `--config nope.yaml: there is no file ${join(cwd, 'nope.yaml')}`,
      });
    } finally {
      rmSync(cwd, { recursive: true, force: true });
      cwd = home;
    }
  });

  it('fit shortens in the middle', () => {
    expect(fit('abcdefghij', 5)).toBe('ab…ij');
    expect(fit('abc', 5)).toBe('abc');
  });
});

describe('broker audit tail', () => {
  const tail = (args: string[], extra: object = {}) => runAuditTail(args, { ...io(), ...extra });

  it('shows the newest N records, one readable line each; --json the stored lines', async () => {
    const n = h.request([['Docs', 'read']]);
    await h.engine.apply({ kind: 'deny', request: n }, 'socket');
    await h.engine.apply({ kind: 'revoke', target: 'all' }, 'socket');
    out = '';
    expect(await tail(['-n', '2'])).toBe(0);
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^2025-01-02 12:00:00Z #\d+ decision actor=socket command="deny 1" outcome=denied request=1$/,
    );
    expect(lines[1]).toMatch(
      / revoke actor=socket cause=command grants=\[\] outcome=revoked target=all$/,
    );
    out = '';
    expect(await tail(['-n', '1', '--json', '--data-dir', h.dir])).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ event: 'revoke', actor: 'socket' });
  });

  it('--follow prints records as they are written, until stopped', async () => {
    let stop: () => void = () => undefined;
    const stopped = new Promise<void>((r) => (stop = r));
    out = '';
    const running = tail(['-n', '1', '--follow'], { stopped: () => stopped, pollMs: 5 });
    await h.engine.apply({ kind: 'revoke', target: 'all' }, 'socket');
    await until('the new record', () => out.includes(' revoke '), undefined, 5);
    stop();
    expect(await running).toBe(0);
  });

  it('no log: exit 1 naming the file', async () => {
    err = '';
    expect(await tail(['--data-dir', cwd])).toBe(1);
    expect(err).toContain(`cannot read ${join(cwd, 'audit.log')} (ENOENT)`);
  });
});
