/**
 * checkInstance against servers that are not (quite) a working Nextcloud: a scripted
 * HTTP server on 127.0.0.1 answers each route as told, and records what it received.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { InstanceConfig } from '../../broker/config.js';
import { checkInstance } from '../../broker/doctor/nextcloud.js';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

const STATUS_OK: Answer = {
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ installed: true, maintenance: false, versionstring: '30.0.1' }),
};

let server: Server;
let base: string;
let routes: Map<string, Answer>;
let seen: { method: string; path: string; auth: boolean }[];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    seen.push({ method: req.method ?? '', path, auth: req.headers.authorization !== undefined });
    const key = `${req.method ?? ''} ${path}`;
    const answer = routes.get(key) ?? { status: 404, body: 'not here' };
    req.resume();
    res.writeHead(answer.status, answer.headers ?? {});
    res.end(answer.body ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  routes = new Map();
  seen = [];
});

const instance = (): InstanceConfig => ({
  name: 'odd',
  url: base,
  username: 'alice',
  app_password: 'Odd-AppPassword-0123456789',
  discovery: false,
});
const DAV_ROOT = 'PROPFIND /remote.php/dav/files/alice/';
const CAPS = 'GET /ocs/v2.php/cloud/capabilities';

describe('reachability', () => {
  it('maintenance mode', async () => {
    routes.set('GET /status.php', {
      status: 200,
      body: JSON.stringify({ installed: true, maintenance: true }),
    });
    const [first] = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(first?.status).toBe('fail');
    expect(first?.label).toContain('maintenance mode');
    expect(seen.some((s) => s.auth)).toBe(false);
  });

  it('not installed', async () => {
    routes.set('GET /status.php', { status: 200, body: JSON.stringify({ installed: false }) });
    const [first] = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(first?.label).toContain('not installed');
  });

  it('a redirect is reported, not followed', async () => {
    routes.set('GET /status.php', {
      status: 301,
      headers: { location: 'https://cloud.example.org/status.php' },
    });
    const [first] = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(first?.status).toBe('fail');
    expect(first?.detail).toContain('https://cloud.example.org/status.php');
    expect(first?.fix).toContain('instances.odd.url');
    expect(seen).toHaveLength(1);
  });

  it('something that is not Nextcloud (HTML at status.php)', async () => {
    routes.set('GET /status.php', { status: 200, body: '<html>hello</html>' });
    const [first] = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(first?.label).toContain('no Nextcloud answers');
  });

  it('a server that never answers times out', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as { port: number }).port;
      const [first] = await checkInstance(
        { ...instance(), url: `http://127.0.0.1:${port}` },
        { timeoutMs: 200 },
      );
      expect(first?.detail).toBe('no answer (timed out)');
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});

describe('credentials', () => {
  beforeEach(() => routes.set('GET /status.php', STATUS_OK));

  it('404 on the user root: the user id is wrong', async () => {
    routes.set(DAV_ROOT, { status: 404 });
    const checks = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(checks.map((c) => c.status)).toEqual(['pass', 'fail', 'skip', 'skip', 'skip']);
    expect(checks[1]?.fix).toContain('instances.odd.username');
    expect(seen.filter((s) => s.auth)).toHaveLength(1);
  });

  it('403 and other statuses name what was seen', async () => {
    routes.set(DAV_ROOT, { status: 403 });
    expect((await checkInstance(instance(), { timeoutMs: 2_000 }))[1]?.detail).toBe('HTTP 403');
    routes.set(DAV_ROOT, { status: 418 });
    expect((await checkInstance(instance(), { timeoutMs: 2_000 }))[1]?.detail).toBe('HTTP 418');
  });

  it('429 on the credentials request: throttled, not retried', async () => {
    routes.set(DAV_ROOT, { status: 429 });
    const checks = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(checks[1]?.label).toContain('throttling');
    expect(seen.filter((s) => s.auth)).toHaveLength(1);
  });

  it('unreadable capabilities: that check fails, the next is not checked', async () => {
    routes.set(DAV_ROOT, { status: 207 });
    routes.set(CAPS, { status: 200, body: 'not json' });
    const checks = await checkInstance(instance(), { timeoutMs: 2_000 });
    expect(checks.map((c) => c.status)).toEqual([
      'pass',
      'pass',
      'fail',
      'skip',
      'skip',
      'warn',
      'pass',
    ]);
    expect(checks[2]?.label).toContain('capabilities could not be read');
    expect(checks[2]?.detail).toContain('bad_response');
  });
});
