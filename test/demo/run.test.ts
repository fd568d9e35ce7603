/**
 * startDemo in-process (real fake Nextcloud, real broker, console on in-memory streams):
 * the banner comes before the console's greeting, the console approves, tokens.env is
 * private and removed on stop, and a failed start closes the fake Nextcloud.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { askOwner } from '../../broker/approval/owner/client.js';
import { AuditLog } from '../../broker/audit/index.js';
import { startDemo, type StartCloud } from '../../broker/demo/run.js';
import { DEMO_FILES } from '../../broker/demo/seed.js';
import { startFakeNextcloud } from '../../fakes/nextcloud.js';
import { call, connectMcp } from '../../support/mcp.js';
import { until } from '../../support/until.js';

let cwd: string;
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'broker-demo-run-'));
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** The real fake Nextcloud, counting closes. */
function cloud(): { start: StartCloud; closed: () => number } {
  let closed = 0;
  return {
    start: async (opts) => {
      const fake = await startFakeNextcloud(opts);
      return {
        url: fake.url,
        close: async () => {
          closed += 1;
          await fake.close();
        },
      };
    },
    closed: () => closed,
  };
}

describe('startDemo', () => {
  it('banner first, then the console; approve on stdin; stop removes tokens.env', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    let err = '';
    const c = cloud();
    const demo = await startDemo({
      cwd,
      env: {},
      stdin,
      stdout,
      stderr: (t) => (err += t),
      startCloud: c.start,
      preferredPort: 0,
    });
    try {
      await until('console greeting', () => out.includes('Approval console'), undefined, 10);
      expect(out.indexOf('MCP URL')).toBeLessThan(out.indexOf('Approval console'));
      expect(out).toContain(`MCP URL       ${demo.mcpUrl}`);
      expect(out).toContain(`Agent token   ${demo.agentToken}`);
      expect(statSync(demo.tokensFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(demo.tokensFile, 'utf8')).toContain(demo.transferToken);
      // The demo config holds no secret.
      const yaml = readFileSync(join(cwd, 'data', 'demo', 'config.yaml'), 'utf8');
      for (const secret of [demo.agentToken, demo.transferToken])
        expect(yaml).not.toContain(secret);

      const agent = await connectMcp(demo.mcpUrl, demo.agentToken);
      await call(agent, 'request_access', {
        instance: 'demo',
        reason: 'notes',
        items: [{ path: 'Documents/notes.txt', mode: 'read' }],
      });
      await until('the request on the console', () => out.includes('Request 1'), undefined, 10);
      stdin.write('approve 1\n');
      await until('the approval', () => out.includes('Approved request 1'), undefined, 10);
      const grants = await call(agent, 'check_access', { request: 1 });
      await agent.close();
      expect(grants).toMatchObject({ status: 'ok', state: 'approved' });
      // The expected loopback-http config warning is not shown; nothing else went wrong.
      expect(err).toBe('');
      // Not a terminal: the banner says so, and closing the input hands approvals to
      // the owner socket instead of refusing every request from then on.
      expect(out).toContain('stdin is not a terminal, so this demo runs headless');
      stdin.end();
      await until(
        'the closed-input notice',
        () => out.includes('Console input ended'),
        undefined,
        10,
      );
      expect(out).toContain('approvals continue over the owner socket');
      const late = await connectMcp(demo.mcpUrl, demo.agentToken);
      const pending = await call(late, 'request_access', {
        instance: 'demo',
        reason: 'more',
        items: [{ path: 'Projects', mode: 'read' }],
      });
      expect(pending).toMatchObject({ status: 'pending', request: 2 });
      await until(
        'the request on the console',
        () => out.includes('broker approve 2'),
        undefined,
        10,
      );
      const answer = await askOwner(join(cwd, 'data', 'demo'), {
        op: 'command',
        text: 'approve 2',
      });
      expect(answer).toMatchObject({ ok: true, granted: [{ request: 2, path: 'Projects' }] });
      expect(await call(late, 'check_access', { request: 2 })).toMatchObject({ state: 'approved' });
      await late.close();
    } finally {
      await demo.stop();
    }
    await demo.stop(); // idempotent
    expect(existsSync(demo.tokensFile)).toBe(false);
    expect(c.closed()).toBe(1);
    expect((await fetch(`${demo.brokerUrl}/health`).catch(() => undefined))?.status).toBe(
      undefined,
    );
  });

  it('a start refused because a broker holds the data folder starts nothing and writes nothing', async () => {
    const held = await AuditLog.open(join(cwd, 'data', 'demo'), { now: Date.now });
    const c = cloud();
    let started = 0;
    const before = readdirSync(join(cwd, 'data', 'demo')).sort();
    try {
      await expect(
        startDemo(
          quietDeps(async (opts) => {
            started += 1;
            return c.start(opts);
          }),
        ),
      ).rejects.toThrow(`already running on .${sep}data${sep}demo (process ${process.pid}`);
      expect(started).toBe(0);
      // Only what the holder wrote is there: no config, secrets, lock or tokens of ours.
      expect(readdirSync(join(cwd, 'data', 'demo')).sort()).toEqual(before);
      expect(before).not.toContain('config.yaml');
      expect(existsSync(join(cwd, 'data', 'demo-cloud'))).toBe(false);
    } finally {
      await held.close();
    }
  });

  it('a start that fails after the lock undoes it: cloud closed, secrets and lock gone', async () => {
    const c = cloud();
    // Something the demo does not expect where its config goes: the start fails there.
    mkdirSync(join(cwd, 'data', 'demo', 'config.yaml'), { recursive: true });
    await expect(startDemo(quietDeps(c.start))).rejects.toThrow();
    expect(c.closed()).toBe(1);
    expect(existsSync(join(cwd, 'data', 'demo', 'secrets'))).toBe(false);
    expect(existsSync(join(cwd, 'data', 'demo', 'demo.lock'))).toBe(false);
  });

  it('wrong answer fixed: after a restart the banner suggests no request number that cannot work', async () => {
    const out = await bannerOf(cwd);
    expect(out).not.toMatch(/\b(approve|deny|revoke) 1\b/);
    expect(out).toContain('npx broker approve N   npx broker deny N');
  });

  it('wrong answer fixed: a trashed file stays restorable after the demo stops ("the owner can restore it")', async () => {
    const first = await running(cwd);
    const agent = await connectMcp(first.demo.mcpUrl, first.demo.agentToken);
    await call(agent, 'request_access', {
      instance: 'demo',
      reason: 'tidy',
      items: [{ path: 'Documents', mode: 'write' }],
    });
    await until('the request', () => first.out().includes('Request 1'), undefined, 10);
    first.stdin.write('approve 1\n');
    await until('the approval', () => first.out().includes('Approved request 1'), undefined, 10);
    const trashed = await call(agent, 'trash', { instance: 'demo', path: 'Documents/notes.txt' });
    await agent.close();
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(JSON.stringify(trashed)).toContain('the owner can restore it');
    expect(first.out()).toContain(`Trash bin        .${sep}data${sep}demo-cloud-trash`);
    await first.demo.stop();

    const trashFiles = join(cwd, 'data', 'demo-cloud-trash', 'files');
    // Trashed under the unique name the answer gives (a name no other delete can take).
    expect(trashed['trashed_as']).toMatch(/^Documents\/notes \(trashed [a-z2-7]{8}\)\.txt$/);
    expect(readdirSync(trashFiles)).toEqual([
      expect.stringMatching(/^notes \(trashed [a-z2-7]{8}\)\.txt\.d\d+$/),
    ]);
    // Next start: the demo cloud still has it in its trash bin and restores it.
    const second = await running(cwd);
    try {
      const password = readFileSync(
        join(cwd, 'data', 'demo', 'secrets', 'demo-app-password'),
        'utf8',
      ).trim();
      const cloudUrl = /Demo Nextcloud\s+(http:\/\/\S+)/.exec(second.out())?.[1] ?? '';
      const base = `${cloudUrl}/remote.php/dav/trashbin/demo`;
      const auth = `Basic ${Buffer.from(`demo:${password}`).toString('base64')}`;
      const id = readdirSync(trashFiles)[0] ?? '';
      const restored = await fetch(`${base}/trash/${id}`, {
        method: 'MOVE',
        headers: { Authorization: auth, Destination: `${base}/restore/${id}` },
      });
      expect(restored.status).toBe(201);
      // Restored under the name it was trashed under, with its content.
      expect(
        readFileSync(join(cwd, 'data', 'demo-cloud', String(trashed['trashed_as'])), 'utf8'),
      ).toBe(DEMO_FILES.get('Documents/notes.txt'));
    } finally {
      await second.demo.stop();
    }
  });
});

/** Demo deps on `cwd` that print nothing. */
function quietDeps(startCloud: StartCloud): Parameters<typeof startDemo>[0] {
  return {
    cwd,
    env: {},
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr: () => undefined,
    startCloud,
    preferredPort: 0,
  };
}

/** A demo started in-process on `dir`, with its output collected. */
async function running(dir: string): Promise<{
  demo: Awaited<ReturnType<typeof startDemo>>;
  stdin: PassThrough;
  out: () => string;
}> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  const demo = await startDemo({
    cwd: dir,
    env: {},
    stdin,
    stdout,
    stderr: () => undefined,
    startCloud: cloud().start,
    preferredPort: 0,
  });
  await until('console greeting', () => out.includes('Approval console'), undefined, 10);
  return { demo, stdin, out: () => out };
}

/** The banner of a second start (after a first one made and decided request 1). */
async function bannerOf(dir: string): Promise<string> {
  const first = await running(dir);
  const agent = await connectMcp(first.demo.mcpUrl, first.demo.agentToken);
  await call(agent, 'request_access', {
    instance: 'demo',
    reason: 'x',
    items: [{ path: 'Documents', mode: 'read' }],
  });
  await agent.close();
  await first.demo.stop();
  const second = await running(dir);
  await second.demo.stop();
  return second.out();
}
