/** The fault switches and the request record the broker's tests rely on. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, sabreException } from './helpers.js';

let fake: FakeNextcloud;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: 'p@ss:w0rd/+?' });
});
beforeEach(async () => {
  fake.reset();
  await fake.writeFile('f.txt', 'content of f');
});
afterAll(async () => {
  await fake.close();
});

describe('requests', () => {
  it('records method, raw path and headers of every request, in order', async () => {
    await dav(fake, 'GET', 'f.txt', { headers: { 'X-Probe': '1' } });
    await dav(fake, 'PROPFIND', 'a%20b/', { headers: { Depth: '0' } });
    expect(fake.requests.map((r) => [r.method, r.path])).toEqual([
      ['GET', `/remote.php/dav/files/${fake.user}/f.txt`],
      ['PROPFIND', `/remote.php/dav/files/${fake.user}/a%20b/`],
    ]);
    expect(fake.requests[0]?.headers['x-probe']).toBe('1');
  });

  it('reset() empties it', async () => {
    await dav(fake, 'GET', 'f.txt');
    fake.reset();
    expect(fake.requests).toHaveLength(0);
  });
});

describe('faults.down', () => {
  it('destroys connections without an answer, and recovers when switched off', async () => {
    fake.faults.down = true;
    await expect(dav(fake, 'GET', 'f.txt')).rejects.toThrow();
    fake.faults.down = false;
    expect((await dav(fake, 'GET', 'f.txt')).status).toBe(200);
  });
});

describe('faults.slowMs', () => {
  it('delays every answer', async () => {
    fake.faults.slowMs = 150;
    const t0 = performance.now();
    const res = await dav(fake, 'GET', 'f.txt');
    expect(res.status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('a client timeout fires while the fake is slow', async () => {
    fake.faults.slowMs = 2_000;
    const res = fetch(`${fake.url}/status.php`, { signal: AbortSignal.timeout(100) });
    await expect(res).rejects.toThrow(/abort|timeout/i);
  });
});

describe('faults.propfindDelayMs', () => {
  it('delays PROPFIND answers only, and answers with what is there after the delay', async () => {
    fake.faults.propfindDelayMs = 300;
    const t0 = performance.now();
    const listing = dav(fake, 'PROPFIND', '', { headers: { Depth: '1' } });
    expect((await dav(fake, 'GET', 'f.txt')).status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(300);
    await fake.writeFile('late.txt', 'written while the PROPFIND waited');
    const res = await listing;
    expect(res.status).toBe(207);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(await res.text()).toContain('late.txt');
  });
});

describe('faults.status', () => {
  it.each([[500], [503], [507], [429]])(
    'answers every request with %i and changes nothing',
    async (status) => {
      fake.faults.status = status;
      const put = await dav(fake, 'PUT', 'f.txt', { body: 'overwritten' });
      expect(put.status).toBe(status);
      expect(sabreException(await put.text())).toMatch(/Exception|Bruteforce/);
      expect((await dav(fake, 'GET', 'f.txt')).status).toBe(status);
      fake.faults.status = null;
      expect((await fake.readFile('f.txt'))?.toString()).toBe('content of f');
    },
  );
});

describe('faults.flipByte', () => {
  it('flips exactly one byte of a GET body', async () => {
    fake.faults.flipByte = true;
    const got = Buffer.from(await (await dav(fake, 'GET', 'f.txt')).arrayBuffer());
    const original = Buffer.from('content of f');
    expect(got.length).toBe(original.length);
    const diffs = [...got].filter((b, i) => b !== original[i]);
    expect(diffs).toHaveLength(1);
    expect((await fake.readFile('f.txt'))?.equals(original)).toBe(true);
  });
});

describe('faults.echoAuth', () => {
  it('puts the Authorization header and the password into error bodies', async () => {
    fake.faults.echoAuth = true;
    const res = await dav(fake, 'GET', 'missing.txt');
    expect(res.status).toBe(404);
    const body = await res.text();
    const auth = 'Basic ' + Buffer.from(`${fake.user}:${fake.password}`).toString('base64');
    // Sabre escapes XML specials; the password here has none of them.
    expect(body).toContain(auth);
    expect(body).toContain(fake.password);
    expect(body).toContain(encodeURIComponent(fake.password));
  });

  it('also leaks into OCS error bodies', async () => {
    fake.faults.echoAuth = true;
    const res = await fetch(`${fake.url}/ocs/v2.php/cloud/user?format=json`, {
      headers: {
        'OCS-APIRequest': 'true',
        Authorization: `Basic ${Buffer.from(`${fake.user}:wrong`).toString('base64')}`,
      },
    });
    expect(res.status).toBe(401);
    expect(await res.text()).toContain(fake.password);
  });

  it('leaves success bodies alone and is off by default', async () => {
    fake.faults.echoAuth = true;
    expect(await (await dav(fake, 'GET', 'f.txt')).text()).toBe('content of f');
    fake.reset();
    expect(await (await dav(fake, 'GET', 'missing.txt')).text()).not.toContain(fake.password);
  });
});

describe('faults.trashbin off', () => {
  it('the trashbin endpoint is gone (404)', async () => {
    fake.faults.trashbin = false;
    const res = await fetch(`${fake.url}/remote.php/dav/trashbin/${fake.user}/trash/`, {
      method: 'PROPFIND',
      headers: {
        Authorization: 'Basic ' + Buffer.from(`${fake.user}:${fake.password}`).toString('base64'),
      },
    });
    expect(res.status).toBe(404);
  });
});

describe('reset()', () => {
  it('restores every default fault and drops locks, keeping files', async () => {
    Object.assign(fake.faults, {
      trashbin: false,
      filesLock: false,
      versions: false,
      slowMs: 5,
      propfindDelayMs: 7,
      status: 503,
      flipByte: true,
      echoAuth: true,
      xHash: 'wrong',
      uploadDeleteForbidden: 3,
      quotaBytes: 10,
      putBodyLimit: 1024,
      activityApp: false,
      groups: ['admin'],
    });
    await fake.lockAs('f.txt', { type: 'token' });
    fake.reset();
    expect(fake.faults).toEqual({
      trashbin: true,
      filesLock: true,
      versions: true,
      down: false,
      slowMs: 0,
      propfindDelayMs: 0,
      status: null,
      flipByte: false,
      echoAuth: false,
      xHash: 'honest',
      uploadDeleteForbidden: 0,
      quotaBytes: null,
      putGate: null,
      gate: null,
      putBodyLimit: null,
      activityApp: true,
      groups: [],
    });
    expect(fake.lockOf('f.txt')).toBeUndefined();
    expect(await fake.exists('f.txt')).toBe(true);
  });
});
