/**
 * `broker start` as a real subprocess in a temp folder, the way `npm start` runs it:
 * without a config it starts the demo (fake Nextcloud, fresh tokens, console approval)
 * and prints everything a newcomer needs; with a config it is `broker serve`.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { DEMO_FILES } from '../../broker/demo/seed.js';
import { runCli, spawnBrokerCommand, type BrokerProcess } from '../../support/processes.js';
import { call, connectMcp } from '../../support/mcp.js';
import { until } from '../../support/until.js';

const dirs: string[] = [];
const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

/** The environment of a newcomer's shell: no BROKER_CONFIG. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...extra };
  return env;
}

// Hold the demo's usual port so the demo must notice and pick another one (this also
// keeps the test away from a broker a developer may be running on 8765).
let blocker: Server | undefined;
beforeAll(async () => {
  blocker = await new Promise<Server | undefined>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen(8765, '127.0.0.1', () => resolve(s));
  });
});
afterAll(async () => {
  await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Banner {
  mcpUrl: string;
  agentToken: string;
  brokerUrl: string;
  transferToken: string;
}

function parseBanner(text: string): Banner {
  const grab = (re: RegExp): string => {
    const m = re.exec(text);
    if (m?.[1] === undefined) throw new Error(`banner lacks ${String(re)}:\n${text}`);
    return m[1];
  };
  return {
    mcpUrl: grab(/MCP URL\s+(http:\/\/\S+\/mcp)/),
    agentToken: grab(/Agent token\s+(\S+)/),
    brokerUrl: grab(/export BROKER_URL=(\S+)/),
    transferToken: grab(/export BROKER_TRANSFER_TOKEN=(\S+)/),
  };
}

async function startDemo(cwd: string): Promise<{ broker: BrokerProcess; banner: Banner }> {
  const broker = spawnBrokerCommand(['start'], { cwd, env: cleanEnv() });
  try {
    await broker.waitFor(/Approval console: [^\n]*\n[^\n]*\n/);
  } catch (error) {
    await broker.stop();
    throw error;
  }
  return { broker, banner: parseBanner(broker.stdout()) };
}

describe('broker start without a config: the demo', () => {
  it('prints URL, tokens and client config; request, approve on stdin, list and fetch; SIGTERM exits 0', async () => {
    const cwd = tempDir('broker-demo-');
    const { broker, banner } = await startDemo(cwd);
    let stopped = false;
    try {
      const out = broker.stdout();
      // The usual port is held above: the demo says so and uses another one.
      expect(out).toContain('8765 is busy');
      expect(banner.brokerUrl).not.toContain(':8765');
      expect(banner.mcpUrl).toBe(`${banner.brokerUrl}/mcp`);
      expect(banner.brokerUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(banner.agentToken.length).toBeGreaterThanOrEqual(32);
      expect(banner.transferToken.length).toBeGreaterThanOrEqual(32);
      expect(banner.agentToken).not.toBe(banner.transferToken);
      // A ready-to-paste mcpServers config and a `claude mcp add` line, both with the token.
      const json = /(\{\n\s+"mcpServers"[\s\S]*?\n {4}\})/.exec(out)?.[1];
      expect(json).toBeDefined();
      expect(JSON.parse(json ?? '{}')).toEqual({
        mcpServers: {
          'nextcloud-broker': {
            type: 'http',
            url: banner.mcpUrl,
            headers: { Authorization: `Bearer ${banner.agentToken}` },
          },
        },
      });
      expect(out).toContain(
        `claude mcp add --transport http nextcloud-broker ${banner.mcpUrl} --header "Authorization: Bearer ${banner.agentToken}"`,
      );

      // Example files seeded; state in ./data/demo; tokens.env private.
      for (const [path, content] of DEMO_FILES)
        expect(readFileSync(join(cwd, 'data', 'demo-cloud', path), 'utf8')).toBe(content);
      const tokensFile = join(cwd, 'data', 'demo', 'tokens.env');
      expect(statSync(tokensFile).mode & 0o777).toBe(0o600);
      const tokens = readFileSync(tokensFile, 'utf8');
      expect(tokens).toContain(`export BROKER_URL=${banner.brokerUrl}\n`);
      expect(tokens).toContain(`export BROKER_TRANSFER_TOKEN=${banner.transferToken}\n`);
      expect(tokens).not.toContain(banner.agentToken);

      const health = await fetch(`${banner.brokerUrl}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok' });

      // The banner's metrics line works as printed: its token file, its URL.
      const curl = /curl -s -H "Authorization: Bearer \$\(cat (\S+)\)" (\S+)\/metrics \| head/.exec(
        out,
      );
      expect(curl?.[2]).toBe(banner.brokerUrl);
      const metricsToken = readFileSync(join(cwd, curl?.[1] ?? 'missing'), 'utf8').trim();
      expect(metricsToken).not.toBe(banner.agentToken);
      const metrics = await fetch(`${banner.brokerUrl}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      });
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('# HELP broker_requests_total');

      const cliEnv = {
        BROKER_URL: banner.brokerUrl,
        BROKER_TRANSFER_TOKEN: banner.transferToken,
        BROKER_STAGE_DIR: tempDir('broker-demo-stage-'),
      };
      const agent = await connectMcp(banner.mcpUrl, banner.agentToken);
      try {
        const tools = (await agent.listTools()).tools.map((t) => t.name).sort();
        expect(tools).toEqual(
          [
            'calendar_create_event',
            'calendar_events',
            'check_access',
            'collections',
            'contacts_search',
            'list',
            'list_instances',
            'mkdir',
            'move',
            'request_access',
            'search',
            'trash',
          ].sort(),
        );
        expect(await call(agent, 'list_instances')).toMatchObject({
          status: 'ok',
          instances: [{ name: 'demo', discovery: true }],
        });
        // Search works on the demo's own files (discovery: names and paths only).
        expect(
          await call(agent, 'search', { instance: 'demo', path: '', query: 'WELCOME' }),
        ).toMatchObject({
          status: 'ok',
          entries: [{ name: 'welcome.md', kind: 'file', path: 'Documents/welcome.md' }],
        });
        // The demo seeds a calendar and an address book for the quick tour.
        const calendars = await call(agent, 'collections', { instance: 'demo', kind: 'calendar' });
        expect((calendars.collections as { name: string }[]).map((c) => c.name)).toContain(
          'personal',
        );
        // Discovery shows names; content needs a grant: the CLI is refused (exit 3) before approval.
        const early = await runCli(['fetch', 'demo:Documents/welcome.md'], cliEnv);
        expect(early.code, early.stderr).toBe(3);
        const before = broker.stdout().length;
        const requested = await call(agent, 'request_access', {
          instance: 'demo',
          reason: 'read the welcome note',
          items: [{ path: 'Documents', mode: 'read' }],
        });
        expect(requested).toMatchObject({ status: 'pending', request: 1 });
        // The request appears on the console; the owner types the Matrix command.
        await broker.waitFor(/Request 1[\s\S]*Documents/, { from: before });
        broker.type('approve 1');
        await broker.waitFor('Approved request 1', { from: before });
        const listed = await call(agent, 'list', { instance: 'demo', path: 'Documents' });
        expect(listed.status).toBe('ok');
        expect(JSON.stringify(listed)).toContain('welcome.md');
      } finally {
        await agent.close();
      }

      // The CLI with the printed environment fetches a demo file.
      const dest = join(tempDir('broker-demo-fetch-'), 'welcome.md');
      const fetched = await runCli(['fetch', 'demo:Documents/welcome.md', dest], cliEnv);
      expect(fetched.code, fetched.stderr).toBe(0);
      expect(fetched.json).toMatchObject({ status: 'fetched', local_path: dest });
      expect(readFileSync(dest, 'utf8')).toBe(DEMO_FILES.get('Documents/welcome.md'));

      // `revoke all` on the console ends it: the same fetch is refused (exit 3).
      const mark = broker.stdout().length;
      broker.type('revoke all');
      await broker.waitFor(/Revoked/i, { from: mark });
      const after = await runCli(['fetch', 'demo:Documents/welcome.md', dest], cliEnv);
      expect(after.code, after.stderr).toBe(3);

      stopped = true;
      expect(await broker.stop('SIGTERM')).toBe(0);
    } finally {
      if (!stopped) await broker.stop('SIGKILL');
    }
    expect(broker.stderr()).toContain('stopped (audit log flushed)');
    // Tokens die with the demo; the audit log is complete and verifies.
    expect(existsSync(join(cwd, 'data', 'demo', 'tokens.env'))).toBe(false);
    const dataDir = join(cwd, 'data', 'demo');
    expect(verifyAudit(dataDir)).toMatchObject({ ok: true });
    const events = readFileSync(join(dataDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { event: string }).event);
    expect(events[0]).toBe('start');
    expect(events).toContain('decision');
    expect(events.at(-1)).toBe('stop');
    // Logs (stderr) never carry the tokens.
    expect(broker.stderr()).not.toContain(banner.agentToken);
    expect(broker.stderr()).not.toContain(banner.transferToken);
  });

  it('a second start keeps edited files and the grants, with new tokens', async () => {
    const cwd = tempDir('broker-demo-again-');
    const first = await startDemo(cwd);
    const agent = await connectMcp(first.banner.mcpUrl, first.banner.agentToken);
    await call(agent, 'request_access', {
      instance: 'demo',
      reason: 'plan',
      items: [{ path: 'Projects', mode: 'read' }],
    });
    await first.broker.waitFor('Request 1');
    first.broker.type('approve 1');
    await first.broker.waitFor('Approved request 1');
    await agent.close();
    expect(await first.broker.stop('SIGINT')).toBe(0);

    const edited = join(cwd, 'data', 'demo-cloud', 'Documents', 'welcome.md');
    writeFileSync(edited, 'my own notes\n');
    const second = await startDemo(cwd);
    try {
      expect(second.broker.stdout()).not.toContain('example files created');
      expect(readFileSync(edited, 'utf8')).toBe('my own notes\n');
      expect(second.banner.agentToken).not.toBe(first.banner.agentToken);
      expect(second.banner.transferToken).not.toBe(first.banner.transferToken);
      // The old token no longer opens the agent surface.
      const stale = await fetch(second.banner.mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${first.banner.agentToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: '{}',
      });
      expect(stale.status).toBe(401);
      const again = await connectMcp(second.banner.mcpUrl, second.banner.agentToken);
      const listed = await call(again, 'list', { instance: 'demo', path: 'Projects' });
      await again.close();
      expect(listed.status).toBe('ok');
    } finally {
      expect(await second.broker.stop('SIGTERM')).toBe(0);
    }
  });

  it('wrong answer fixed: a second start while the demo runs exits non-zero, names the demo, and changes no file', async () => {
    const cwd = tempDir('broker-demo-twice-');
    const first = await startDemo(cwd);
    try {
      // The running demo's own writes settle first (its checkpoint follows the log).
      const dataDir = join(cwd, 'data', 'demo');
      await until('the running demo is idle', () => checkpointLevel(dataDir));
      const before = snapshot(join(cwd, 'data'));
      expect(before.has(join('demo', 'config.yaml'))).toBe(true);
      const second = spawnBrokerCommand(['start'], { cwd, env: cleanEnv() });
      const code = await second.exited;
      expect(code).not.toBe(0);
      expect(second.stderr()).toContain('a demo is already running');
      expect(second.stderr()).toContain(`process ${first.broker.child.pid}`);
      expect(second.stderr()).toContain(first.banner.brokerUrl);
      expect(snapshot(join(cwd, 'data'))).toEqual(before);
      // The running demo is untouched and still answers.
      expect((await fetch(`${first.banner.brokerUrl}/health`)).status).toBe(200);
    } finally {
      expect(await first.broker.stop('SIGTERM')).toBe(0);
    }
  });

  it('broker doctor --config data/demo/config.yaml is all green while the demo runs', async () => {
    const cwd = tempDir('broker-demo-doctor-');
    const { broker, banner } = await startDemo(cwd);
    const secrets = join(cwd, 'data', 'demo', 'secrets');
    try {
      expect(statSync(secrets).mode & 0o777).toBe(0o700);
      for (const name of readdirSync(secrets)) {
        expect(statSync(join(secrets, name)).mode & 0o777).toBe(0o600);
      }
      const yaml = readFileSync(join(cwd, 'data', 'demo', 'config.yaml'), 'utf8');
      expect(yaml).toContain('agent_file:');
      expect(yaml).not.toContain(banner.agentToken);
      const doctor = spawnBrokerCommand(['doctor', '--config', 'data/demo/config.yaml'], {
        cwd,
        env: cleanEnv(),
      });
      const code = await doctor.exited;
      expect(code, doctor.stdout() + doctor.stderr()).toBe(0);
      expect(doctor.stdout()).toContain('All checks passed.');
      expect(doctor.stdout()).not.toContain('✗');
      expect(doctor.stdout()).toContain('trash bin on');
      expect(doctor.stdout()).not.toContain(banner.agentToken);
    } finally {
      expect(await broker.stop('SIGTERM')).toBe(0);
    }
    // The secrets die with the demo, like its tokens.
    expect(existsSync(secrets)).toBe(false);
  });
});

/** True when audit.checkpoint holds the head of audit.log and no write is under way. */
function checkpointLevel(dir: string): boolean {
  if (readdirSync(dir).some((f) => f.endsWith('.tmp'))) return false;
  const lines = readFileSync(join(dir, 'audit.log'), 'utf8').trim().split('\n');
  const head = JSON.parse(lines.at(-1) ?? '{}') as { seq?: number };
  const checkpoint = JSON.parse(readFileSync(join(dir, 'audit.checkpoint'), 'utf8')) as {
    seq?: number;
  };
  return head.seq !== undefined && checkpoint.seq === head.seq;
}

/** Every file under `root`: its bytes and mtime, keyed by its relative path. */
function snapshot(root: string): Map<string, { bytes: string; mtimeMs: number }> {
  const out = new Map<string, { bytes: string; mtimeMs: number }>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else
        out.set(relative(root, path), {
          // A socket (the owner socket) has no bytes to read: its identity is its inode.
          bytes: entry.isSocket()
            ? `socket ${statSync(path).ino}`
            : readFileSync(path).toString('base64'),
          mtimeMs: statSync(path).mtimeMs,
        });
    }
  };
  walk(root);
  return out;
}
