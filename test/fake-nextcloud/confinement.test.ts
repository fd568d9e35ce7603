/** The fake serves only its root folder, whatever the request path says. */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, rawRequest, responses } from './helpers.js';

let fake: FakeNextcloud;
let outside: string;

beforeAll(async () => {
  outside = await fsp.mkdtemp(path.join(os.tmpdir(), 'fnc-outside-'));
  await fsp.writeFile(path.join(outside, 'secret.txt'), 'outside root');
  fake = await startFakeNextcloud();
  await fake.writeFile('inside.txt', 'inside');
  await fsp.symlink(outside, path.join(fake.root, 'link-dir'));
  await fsp.symlink(path.join(outside, 'secret.txt'), path.join(fake.root, 'link-file'));
});
afterAll(async () => {
  await fake.close();
  await fsp.rm(outside, { recursive: true, force: true });
});

describe('traversal', () => {
  it('literal .. past the user folder is resolved away by the Apache layer (404, not a file)', async () => {
    const res = await rawRequest(
      fake,
      'GET',
      `/remote.php/dav/files/${fake.user}/../../../../etc/passwd`,
    );
    expect(res.status).toBe(404);
    expect(res.body).not.toContain('root:');
  });

  it('encoded %2e%2e is refused (400)', async () => {
    const res = await rawRequest(
      fake,
      'GET',
      `/remote.php/dav/files/${fake.user}/%2e%2e/%2e%2e/etc/passwd`,
    );
    expect(res.status).toBe(400);
  });

  it('helper paths with .. throw', async () => {
    await expect(fake.readFile('../x')).rejects.toThrow(/bad helper path/);
  });
});

describe('symlinks in root', () => {
  it('are not listed', async () => {
    const res = await dav(fake, 'PROPFIND', '', { headers: { Depth: '1' } });
    const hrefs = responses(await res.text()).map((r) => r.href);
    expect(hrefs.some((h) => h.includes('link-'))).toBe(false);
    expect(hrefs.some((h) => h.endsWith('/inside.txt'))).toBe(true);
  });

  it('are not followed for GET, PUT or PROPFIND', async () => {
    expect((await dav(fake, 'GET', 'link-file')).status).toBe(404);
    expect((await dav(fake, 'GET', 'link-dir/secret.txt')).status).toBe(404);
    expect((await dav(fake, 'PROPFIND', 'link-dir/', { headers: { Depth: '1' } })).status).toBe(
      404,
    );
    expect((await dav(fake, 'PUT', 'link-dir/new.txt', { body: 'x' })).status).toBe(404);
    await expect(fsp.readdir(outside)).resolves.toEqual(['secret.txt']);
  });
});
