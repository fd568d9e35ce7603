/** Facts file, "## OCS and search" and "## Authentication and throttling". */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { failureDelayMs } from '../../fakes/nextcloud/auth.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, dav, sabreException } from './helpers.js';

let fake: FakeNextcloud;

beforeAll(async () => {
  fake = await startFakeNextcloud({ user: 'carol', password: 'Xk9-app-pass' });
});
beforeEach(() => fake.reset());
afterAll(async () => {
  await fake.close();
});

type Caps = {
  ocs: { meta: { statuscode: number }; data: { capabilities: Record<string, unknown> } };
};

describe('GET /ocs/v2.php/cloud/capabilities?format=json with OCS-APIRequest: true', () => {
  it('is 200 with the files capabilities when authenticated', async () => {
    const res = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
      headers: { 'OCS-APIRequest': 'true', Authorization: basic(fake.user, fake.password) },
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as Caps;
    expect(json.ocs.meta.statuscode).toBe(200);
    expect(json.ocs.data.capabilities.files).toBeDefined();
  });

  it('works unauthenticated with a reduced set', async () => {
    const res = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
      headers: { 'OCS-APIRequest': 'true' },
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as Caps;
    expect(json.ocs.data.capabilities.core).toBeDefined();
    expect(json.ocs.data.capabilities.files).toBeUndefined();
  });

  it('answers XML without format=json', async () => {
    const res = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities`, {
      headers: { 'OCS-APIRequest': 'true', Authorization: basic(fake.user, fake.password) },
    });
    expect(res.headers.get('content-type')).toMatch(/xml/);
    expect(await res.text()).toMatch(/<ocs>[\s\S]*<statuscode>200<\/statuscode>/);
  });

  it('files.undelete disappears when the trashbin is off', async () => {
    fake.faults.trashbin = false;
    const res = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
      headers: { 'OCS-APIRequest': 'true', Authorization: basic(fake.user, fake.password) },
    });
    const files = ((await res.json()) as Caps).ocs.data.capabilities.files as Record<
      string,
      unknown
    >;
    expect(files.undelete).toBeUndefined();
  });
});

describe('cloud/user', () => {
  it('is 200 with the user id; unauthenticated 401', async () => {
    const ok = await fetch(`${fake.url}/ocs/v2.php/cloud/user?format=json`, {
      headers: { 'OCS-APIRequest': 'true', Authorization: basic(fake.user, fake.password) },
    });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { ocs: { data: { id: string } } }).ocs.data.id).toBe('carol');
    const anon = await fetch(`${fake.url}/ocs/v2.php/cloud/user?format=json`, {
      headers: { 'OCS-APIRequest': 'true' },
    });
    expect(anon.status).toBe(401);
  });
});

describe('Wrong app password', () => {
  it('is 401 with WWW-Authenticate: Basic realm="Nextcloud", charset="UTF-8"', async () => {
    const res = await dav(fake, 'PROPFIND', '', { auth: basic(fake.user, 'wrong') });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="Nextcloud", charset="UTF-8"');
    expect(sabreException(await res.text())).toBe('Sabre\\DAV\\Exception\\NotAuthenticated');
  });

  it('no credentials at all is 401 too (and does not count as a failure)', async () => {
    for (let i = 0; i < 15; i++) {
      expect((await dav(fake, 'PROPFIND', '', { auth: null })).status).toBe(401);
    }
    expect((await dav(fake, 'PROPFIND', '', { headers: { Depth: '0' } })).status).toBe(207);
  });

  it('a failed login waits at least its scheduled delay (scaled by authDelayScale)', async () => {
    const slow = await startFakeNextcloud({ authDelayScale: 0.02 });
    try {
      const timed = async () => {
        const t0 = performance.now();
        await dav(slow, 'PROPFIND', '', { auth: basic(slow.user, 'nope') });
        return performance.now() - t0;
      };
      const first = await timed(); // 1 s × 0.02 = 20 ms
      await timed();
      await timed();
      await timed();
      const fifth = await timed(); // 4 s × 0.02 = 80 ms
      // Lower bounds only: a sleep is never shorter, but a loaded machine makes any
      // answer longer, so comparing two timings would be a timed test.
      expect(first).toBeGreaterThanOrEqual(19);
      expect(fifth).toBeGreaterThanOrEqual(79);
    } finally {
      await slow.close();
    }
  });

  it('the delay grows with every failure like the real server: 1, 1.2, 1.6, 2.4, 4, 7.4, 13.6, then 26 s', () => {
    const delays = Array.from({ length: 10 }, (_, i) => failureDelayMs(i + 1, 1));
    expect(delays).toEqual([1000, 1200, 1600, 2400, 4000, 7400, 13600, 26000, 26000, 26000]);
    expect(failureDelayMs(5, 0.02)).toBeCloseTo(80);
  });

  it('from the 12th failure the whole client IP gets 429 for every request, valid credentials included, until reset()', async () => {
    for (let i = 1; i <= 11; i++) {
      const res = await dav(fake, 'PROPFIND', '', { auth: basic(fake.user, `bad${i}`) });
      expect(res.status).toBe(401);
    }
    const twelfth = await dav(fake, 'PROPFIND', '', { auth: basic(fake.user, 'bad12') });
    expect(twelfth.status).toBe(429);
    const valid = await dav(fake, 'PROPFIND', '', { headers: { Depth: '0' } });
    expect(valid.status).toBe(429);
    const otherUser = await dav(fake, 'PROPFIND', '', { auth: basic('dave', 'x') });
    expect(otherUser.status).toBe(429);
    const ocs = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`);
    expect(ocs.status).toBe(429);
    fake.reset();
    expect((await dav(fake, 'PROPFIND', '', { headers: { Depth: '0' } })).status).toBe(207);
  });
});
