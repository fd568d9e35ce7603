/**
 * Failure handling against the fake Nextcloud's fault switches: status mapping for
 * every verb, the 401 lock-out, throttling, the one retry of idempotent requests,
 * timeouts, an unreachable server, and secrets echoed into error bodies.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../broker/base/log.js';
import type { NextcloudClient } from '../../broker/nextcloud/index.js';
import { createScrubber } from '../../broker/base/scrub.js';
import { body, readAll, rejectsWith, startRig, type Rig } from './helpers.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
  await rig.fake.writeFile('F/file.txt', 'content');
  await rig.fake.mkdir('F/dir');
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

/** Every verb, as a call that reaches the server with a valid path. */
const VERBS: [string, (c: NextcloudClient) => Promise<unknown>][] = [
  ['list', (c) => c.list('F')],
  ['stat', (c) => c.stat('F/file.txt')],
  ['readStream', (c) => c.readStream('F/file.txt')],
  ['upload', (c) => c.upload('F/new.txt', body('x'), { ifNoneMatch: '*' }, 1)],
  ['mkdir', (c) => c.mkdir('F/newdir')],
  ['move', (c) => c.move('F/file.txt', 'F/renamed.txt')],
  ['lock', (c) => c.lock('F/file.txt', 60)],
  ['unlock', (c) => c.unlock('F/file.txt', 'opaquelocktoken:x')],
  ['capabilities', (c) => c.capabilities()],
];

describe('status mapping for every verb', () => {
  it.each([
    [403, 'forbidden', false],
    [404, 'not_found', false],
    [423, 'locked', true],
    [429, 'throttled', true],
    [503, 'server_error', true],
    [507, 'insufficient_storage', false],
  ] as const)('status %i -> %s (retry %s)', async (status, code, retry) => {
    rig.fake.faults.status = status;
    for (const [name, run] of VERBS) {
      const err = await rejectsWith(run(rig.clientWith()), code, retry);
      expect(err.status, name).toBe(status);
    }
  });

  it('trash maps the capabilities answer first (no DELETE without knowing the trash bin)', async () => {
    rig.fake.faults.status = 503;
    await rejectsWith(rig.client.trash('F/file.txt'), 'server_error', true);
    expect(rig.sent().filter((r) => r.startsWith('DELETE'))).toEqual([]);
  });
});

describe('5xx: one retry for idempotent requests only', () => {
  it('PROPFIND, GET and OCS are sent twice, then the error is returned', async () => {
    rig.fake.faults.status = 500;
    await rejectsWith(rig.client.list('F'), 'server_error', true);
    expect(rig.sent().map((r) => r.split(' ')[0])).toEqual(['PROPFIND', 'PROPFIND']);
    await rejectsWith(rig.clientWith().capabilities(), 'server_error');
    expect(rig.sent()).toHaveLength(2);
  });

  it.each([
    ['PUT', (c: NextcloudClient) => c.upload('F/n.txt', body('x'), { ifNoneMatch: '*' }, 1)],
    ['MKCOL', (c: NextcloudClient) => c.mkdir('F/n')],
    ['MOVE', (c: NextcloudClient) => c.move('F/file.txt', 'F/n.txt')],
    ['UNLOCK', (c: NextcloudClient) => c.unlock('F/file.txt', 'opaquelocktoken:x')],
  ])('%s is never retried', async (method, run) => {
    rig.fake.faults.status = 502;
    await rejectsWith(run(rig.client), 'server_error', true);
    expect(rig.sent().filter((r) => r.startsWith(method))).toHaveLength(1);
  });

  it('DELETE is never retried', async () => {
    const client = rig.clientWith();
    await client.capabilities();
    rig.fake.faults.status = 502;
    // Fresh capabilities are asked first; they fail (twice), and no DELETE goes out.
    await rejectsWith(client.trash('F/file.txt'), 'server_error');
    expect(rig.sent().filter((r) => r.startsWith('DELETE'))).toEqual([]);
  });

  it('a transient 503 is absorbed by the retry', async () => {
    rig.fake.faults.status = 503;
    rig.fake.faults.slowMs = 100;
    // The fault applies when a request is answered: clear it once the retry has arrived.
    const watcher = setInterval(() => {
      if (rig.fake.requests.length >= 2) rig.fake.faults.status = null;
    }, 2);
    try {
      const { entries } = await rig.client.list('F');
      expect(entries.map((e) => e.name)).toEqual(['dir', 'file.txt']);
    } finally {
      clearInterval(watcher);
    }
    expect(rig.sent().map((r) => r.split(' ')[0])).toEqual(['PROPFIND', 'PROPFIND']);
  });
});

describe('credential lock-out attack: a wrong app password (401)', () => {
  it('fails once, then every call fails fast with no request sent', async () => {
    const logger = memoryLogger();
    const client = rig.clientWith({ logger }, 'wrong-password');
    const first = await rejectsWith(client.list('F'), 'unauthorized', false);
    expect(first.status).toBe(401);
    expect(first.message).toMatch(/^re-authenticate: .*app password.*instance 'home'/);
    expect(rig.sent()).toHaveLength(1);
    for (const [, run] of VERBS) {
      const again = await rejectsWith(run(client), 'unauthorized', false);
      expect(again).toBe(first);
    }
    await rejectsWith(client.trash('F/file.txt'), 'unauthorized');
    expect(rig.sent()).toEqual([]);
    expect(logger.lines.join('')).toContain('instance disabled');
  });

  it('a 401 on a write is never retried and disables the client', async () => {
    const client = rig.clientWith({}, 'wrong-password');
    await rejectsWith(client.upload('F/n.txt', body('x'), { ifNoneMatch: '*' }, 1), 'unauthorized');
    expect(rig.sent()).toHaveLength(1);
    await rejectsWith(client.stat('F/file.txt'), 'unauthorized');
    expect(rig.sent()).toEqual([]);
  });

  it('other clients (other instances) keep working', async () => {
    await rejectsWith(rig.clientWith({}, 'wrong-password').stat('F/file.txt'), 'unauthorized');
    expect((await rig.client.stat('F/file.txt')).kind).toBe('file');
  });

  it('throttling (429 for the whole address) is reported as retry later', async () => {
    // Drive the fake's brute-force throttle with many clients, as other programs might.
    for (let i = 0; i < 11; i += 1)
      await rig
        .clientWith({}, `bad-${i}`)
        .stat('F/file.txt')
        .catch(() => undefined);
    const err = await rejectsWith(rig.client.stat('F/file.txt'), 'throttled', true);
    expect(err.message).toContain('wait');
  });
});

describe('timeouts and an unreachable server', () => {
  it('a slow answer is a timeout (retry later)', async () => {
    rig.fake.faults.slowMs = 2000;
    const client = rig.clientWith({ timeoutMs: 150 });
    const started = Date.now();
    const err = await rejectsWith(client.stat('F/file.txt'), 'timeout', true);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(err.message).toContain('did not answer');
  });

  it('a slow upload answer is a timeout, not retried', async () => {
    rig.fake.faults.slowMs = 2000;
    const client = rig.clientWith({ timeoutMs: 150 });
    await rejectsWith(client.upload('F/slow.txt', body('x'), { ifNoneMatch: '*' }, 1), 'timeout');
    expect(rig.sent().filter((r) => r.startsWith('PUT'))).toHaveLength(1);
  });

  it('an upload whose body stalls times out (idle) and replaces nothing', async () => {
    const { Readable } = await import('node:stream');
    let pushed = false;
    const stalled = new Readable({
      read() {
        if (!pushed) this.push(Buffer.from('first bytes'));
        pushed = true;
        // ...then never another byte.
      },
    });
    const client = rig.clientWith({ timeoutMs: 200 });
    await rejectsWith(
      client.upload('F/stalled.txt', stalled, { ifNoneMatch: '*' }, 1000),
      'timeout',
      true,
    );
    expect(await rig.fake.exists('F/stalled.txt')).toBe(false);
  });

  it('a server that drops connections is unreachable (retry later)', async () => {
    rig.fake.faults.down = true;
    const err = await rejectsWith(rig.clientWith().list('F'), 'unreachable', true);
    expect(err.message).toContain('cannot reach');
    await rejectsWith(
      rig.clientWith().upload('F/d.txt', body('x'), { ifNoneMatch: '*' }, 1),
      'unreachable',
    );
  });

  it('a closed port is unreachable', async () => {
    const { NextcloudClient } = await import('../../broker/nextcloud/index.js');
    const client = new NextcloudClient({
      name: 'gone',
      url: 'http://127.0.0.1:1',
      username: 'u',
      app_password: 'Gone-AppPassword-0123',
    });
    const err = await rejectsWith(client.stat('x'), 'unreachable');
    expect(err.message).toContain('ECONNREFUSED');
    client.close();
  });
});

describe('secret leak attack: credentials echoed into error bodies', () => {
  const forms = (password: string, user: string): string[] => [
    password,
    encodeURIComponent(password),
    Buffer.from(`${user}:${password}`).toString('base64'),
    `${user}:${password}`,
  ];

  it('no error message or log line carries the password in any form', async () => {
    rig.fake.faults.echoAuth = true;
    const logger = memoryLogger();
    const client = rig.clientWith({ logger });
    const messages: string[] = [];
    for (const status of [400, 403, 404, 409, 423, 500, 503, 507, 418]) {
      rig.fake.faults.status = status;
      for (const [, run] of VERBS) {
        try {
          await run(client);
        } catch (err) {
          messages.push((err as Error).message);
        }
      }
    }
    // The fake does echo the credentials, and the client quotes server messages...
    expect(messages.some((m) => m.includes('[debug: Authorization: Basic [redacted]'))).toBe(true);
    // ...but never the secret.
    for (const m of [...messages, ...logger.lines])
      for (const f of forms(rig.fake.password, rig.fake.user)) expect(m).not.toContain(f);
  });

  it('an echoed 401 leaves no secret either', async () => {
    rig.fake.faults.echoAuth = true;
    const err = await rejectsWith(rig.clientWith({}, 'wrong-Pa55word').list('F'), 'unauthorized');
    for (const f of forms('wrong-Pa55word', rig.fake.user)) expect(err.message).not.toContain(f);
    const scrub = createScrubber([rig.fake.password]);
    expect(scrub(err.message)).toBe(err.message);
  });
});

describe('flipped bytes are passed through (integrity is checked above this layer)', () => {
  it('streams what the server sent', async () => {
    rig.fake.faults.flipByte = true;
    const { stream } = await rig.client.readStream('F/file.txt');
    const data = await readAll(stream);
    expect(data.length).toBe(7);
    expect(data.subarray(1).toString()).toBe('ontent');
    expect(data[0]).toBe('c'.charCodeAt(0) ^ 0xff);
  });
});
