/**
 * startDemo in-process (real fake Nextcloud, real broker, console on in-memory streams):
 * the banner comes before the console's greeting, the console approves, tokens.env is
 * private and removed on stop, and a failed start closes the fake Nextcloud.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../broker/audit/index.js';
import { startDemo, type StartCloud } from '../../broker/demo/run.js';
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
      await until('console greeting', () => out.includes('Approval console'), 5_000, 10);
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
      await until('the request on the console', () => out.includes('Request 1'), 5_000, 10);
      stdin.write('approve 1\n');
      await until('the approval', () => out.includes('Approved request 1'), 5_000, 10);
      const grants = await call(agent, 'check_access', { request: 1 });
      await agent.close();
      expect(grants).toMatchObject({ status: 'ok', state: 'approved' });
      // The expected loopback-http config warning is not shown; nothing else went wrong.
      expect(err).toBe('');
      // Input closed: the owner is told that nobody can approve any more.
      stdin.end();
      await until('the closed-input notice', () => err.includes('input has closed'), 5_000, 10);
      const late = await connectMcp(demo.mcpUrl, demo.agentToken);
      const refused = await call(late, 'request_access', {
        instance: 'demo',
        reason: 'more',
        items: [{ path: 'Projects', mode: 'read' }],
      });
      await late.close();
      expect(refused).toMatchObject({ status: 'error', code: 'approval_unavailable' });
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

  it('a start that fails (data folder locked by another broker) closes the fake Nextcloud', async () => {
    const held = await AuditLog.open(join(cwd, 'data', 'demo'), { now: Date.now });
    const c = cloud();
    try {
      await expect(
        startDemo({
          cwd,
          env: {},
          stdin: new PassThrough(),
          stdout: new PassThrough(),
          stderr: () => undefined,
          startCloud: c.start,
          preferredPort: 0,
        }),
      ).rejects.toThrow(/lock/i);
      expect(c.closed()).toBe(1);
      expect(existsSync(join(cwd, 'data', 'demo', 'tokens.env'))).toBe(false);
    } finally {
      await held.close();
    }
  });
});
