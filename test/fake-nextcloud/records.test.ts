/**
 * What the fake records beside the files, as docs/nextcloud-behaviour.md says the real
 * servers do (the differential suite holds it to them): which answers show an
 * `X-Request-Id`, the Activity rows a change in a received share writes for the sharer
 * too, and versions made by writes from outside (a change by someone else).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, dav } from './helpers.js';

let fake: FakeNextcloud;
let fake29: FakeNextcloud;
beforeAll(async () => {
  fake = await startFakeNextcloud();
  fake29 = await startFakeNextcloud({ series: 29 });
});
afterAll(async () => {
  await fake.close();
  await fake29.close();
});

function ocs(f: FakeNextcloud, route: string, auth = basic(f.user, f.password)) {
  return fetch(`${f.url}/ocs/v2.php/${route}`, {
    headers: { 'OCS-APIRequest': 'true', Authorization: auth },
  });
}

const ID = /^[A-Za-z0-9]{20}$/;

describe('X-Request-Id', () => {
  it('shows on a WebDAV answer whose method ran to its end, never on a refused one', async () => {
    await fake.writeFile('rid/a.txt', 'a');
    const ok = await dav(fake, 'PROPFIND', 'rid/', { headers: { Depth: '1' } });
    expect(ok.headers.get('x-request-id')).toMatch(ID);
    const missing = await dav(fake, 'GET', 'rid/missing.txt');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-request-id')).toBeNull();
    const stale = await dav(fake, 'PUT', 'rid/a.txt', {
      headers: { 'If-Match': '"x"' },
      body: 'b',
    });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('x-request-id')).toBeNull();
    const unauthenticated = await dav(fake, 'PROPFIND', 'rid/', { auth: null });
    expect(unauthenticated.headers.get('x-request-id')).toBeNull();
    const status = await fetch(`${fake.url}/status.php`);
    expect(status.headers.get('x-request-id')).toBeNull();
    const seen = fake.requests.filter((r) => r.requestId !== undefined);
    expect(seen.map((r) => r.requestId)).toContain(ok.headers.get('x-request-id'));
    expect(new Set(seen.map((r) => r.requestId)).size).toBe(seen.length);
  });

  it('shows on every OCS answer of an app; a refusal before any app shows it on 34 only', async () => {
    expect((await ocs(fake, 'cloud/user?format=json')).headers.get('x-request-id')).toMatch(ID);
    const csrf = await fetch(`${fake.url}/ocs/v2.php/apps/activity/api/v2/activity?format=json`, {
      headers: { Authorization: basic(fake.user, fake.password) },
    });
    expect(csrf.status).toBe(412);
    expect(csrf.headers.get('x-request-id')).toMatch(ID);
    for (const [f, shown] of [
      [fake, true],
      [fake29, false],
    ] as const) {
      const wrong = await ocs(f, 'cloud/user?format=json', basic(f.user, 'wrong'));
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('x-request-id') !== null).toBe(shown);
      const unknown = await ocs(f, 'apps/nope/x?format=json');
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('x-request-id') !== null).toBe(shown);
    }
  });
});

describe('the Activity rows of a change in a received share', () => {
  it('writes one row for the user and one for the sharer, whose id is not the user’s to page from', async () => {
    await fake.mkdir('Recv');
    await fake.receiveShare('Recv', { owner: 'bob' });
    const put = await dav(fake, 'PUT', 'Recv/new.txt', { body: 'n' });
    expect(put.status).toBe(201);
    const page = await ocs(fake, 'apps/activity/api/v2/activity?format=json&limit=1');
    const own = (await page.json()) as { ocs: { data: { activity_id: number; user: string }[] } };
    const newest = own.ocs.data[0];
    expect(newest?.user).toBe(fake.user);
    // Ids are global: the sharer's row for the same change comes right after.
    const theirs = await ocs(
      fake,
      `apps/activity/api/v2/activity?format=json&since=${(newest?.activity_id ?? 0) + 1}`,
    );
    expect(theirs.status).toBe(403);
  });

  it('records a change made by someone else (writeFile with `by`) under their name, and keeps the replaced content as a version', async () => {
    const first = await dav(fake, 'PUT', 'Recv/b.txt', {
      headers: { 'X-OC-Mtime': '1700000000' },
      body: 'first',
    });
    expect(first.status).toBe(201);
    await fake.writeFile('Recv/b.txt', 'second, by bob', { by: 'bob' });
    const page = await ocs(fake, 'apps/activity/api/v2/activity?format=json&limit=1');
    const doc = (await page.json()) as {
      ocs: { data: { type: string; user: string; subject: string; object_id: number }[] };
    };
    expect(doc.ocs.data[0]).toMatchObject({
      type: 'file_changed',
      user: 'bob',
      subject: '@Bob changed Recv/b.txt',
    });
    const versions = await fetch(
      `${fake.url}/remote.php/dav/versions/${fake.user}/versions/${doc.ocs.data[0]?.object_id}`,
      { method: 'PROPFIND', headers: { Authorization: basic(fake.user, fake.password) } },
    );
    expect(versions.status).toBe(207);
    // The collection, the replaced content (named by its mtime), the current content.
    const listed = await versions.text();
    expect(listed.match(/<d:response>/g)).toHaveLength(3);
    expect(listed).toContain(`/${doc.ocs.data[0]?.object_id}/1700000000</d:href>`);
  });
});
