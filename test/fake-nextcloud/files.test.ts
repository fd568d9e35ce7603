/** Facts file, "## Files": one test per row, with plain fetch against the fake. */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { nextSecond, startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, davUrl, PROPFIND_BODY, propstat, responses, sabreException } from './helpers.js';

let fake: FakeNextcloud;
let n = 0;
/** A fresh folder per test, so tests do not see each other's files. */
let dir: string;

beforeEach(async () => {
  fake ??= await startFakeNextcloud();
  fake.reset();
  dir = `t${++n}`;
  await fake.mkdir(dir);
});
afterAll(async () => {
  await fake.close();
});

describe('PROPFIND Depth 1', () => {
  it('is a 207 multistatus with the folder itself first, then its children', async () => {
    await fake.writeFile(`${dir}/b.txt`, 'bee');
    await fake.mkdir(`${dir}/a`);
    const res = await dav(fake, 'PROPFIND', `${dir}/`, {
      headers: { Depth: '1' },
      body: PROPFIND_BODY,
    });
    expect(res.status).toBe(207);
    expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
    const body = await res.text();
    expect(body).toContain('xmlns:d="DAV:"');
    expect(body).toContain('xmlns:oc="http://owncloud.org/ns"');
    expect(body).toContain('xmlns:nc="http://nextcloud.org/ns"');
    const rs = responses(body);
    const base = `/remote.php/dav/files/${fake.user}/${dir}`;
    expect(rs.map((r) => r.href)).toEqual([`${base}/`, `${base}/a/`, `${base}/b.txt`]);
  });

  it('reports oc:permissions, oc:fileid, quoted d:getetag, d:getcontentlength, RFC 1123 d:getlastmodified, d:resourcetype', async () => {
    await fake.writeFile(`${dir}/f.txt`, 'hello');
    const res = await dav(fake, 'PROPFIND', `${dir}/`, {
      headers: { Depth: '1' },
      body: PROPFIND_BODY,
    });
    const [folder, file] = responses(await res.text());
    const folderOk = propstat(folder?.xml ?? '', 200);
    const fileOk = propstat(file?.xml ?? '', 200);
    expect(folderOk).toMatch(/<oc:permissions>RGDNVCK<\/oc:permissions>/);
    expect(folderOk).toContain('<d:resourcetype><d:collection/></d:resourcetype>');
    expect(fileOk).toMatch(/<oc:permissions>RGDNVW<\/oc:permissions>/);
    expect(fileOk).toMatch(/<oc:fileid>\d+<\/oc:fileid>/);
    expect(fileOk).toMatch(/<d:getetag>&quot;[0-9a-f]+&quot;<\/d:getetag>/);
    expect(fileOk).toContain('<d:getcontentlength>5</d:getcontentlength>');
    expect(fileOk).toMatch(
      /<d:getlastmodified>[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT<\/d:getlastmodified>/,
    );
    expect(fileOk).toContain('<d:resourcetype/>');
  });

  it('returns the lock properties 404 in a separate propstat when the file is not locked', async () => {
    await fake.writeFile(`${dir}/f.txt`, 'x');
    const res = await dav(fake, 'PROPFIND', `${dir}/f.txt`, {
      headers: { Depth: '0' },
      body: PROPFIND_BODY,
    });
    const [file] = responses(await res.text());
    const missing = propstat(file?.xml ?? '', 404);
    expect(missing).toContain('<nc:lock/>');
    expect(missing).toContain('<nc:lock-owner/>');
    expect(propstat(file?.xml ?? '', 200)).not.toContain('nc:lock');
  });

  it('honours Depth infinity (recursive)', async () => {
    await fake.writeFile(`${dir}/a/b/c.txt`, 'deep');
    const res = await dav(fake, 'PROPFIND', `${dir}/`, {
      headers: { Depth: 'infinity' },
      body: PROPFIND_BODY,
    });
    const hrefs = responses(await res.text()).map((r) => r.href);
    expect(hrefs.some((h) => h.endsWith(`${dir}/a/b/c.txt`))).toBe(true);
  });

  it('Depth 0 answers the item alone; an unknown path is 404', async () => {
    await fake.writeFile(`${dir}/f.txt`, 'x');
    const one = await dav(fake, 'PROPFIND', `${dir}/`, { headers: { Depth: '0' } });
    expect(responses(await one.text())).toHaveLength(1);
    const missing = await dav(fake, 'PROPFIND', `${dir}/nope`, { headers: { Depth: '0' } });
    expect(missing.status).toBe(404);
    expect(sabreException(await missing.text())).toBe('Sabre\\DAV\\Exception\\NotFound');
  });
});

describe('PUT new / existing', () => {
  it('answers 201 then 204, with ETag, OC-ETag and OC-FileId', async () => {
    const first = await dav(fake, 'PUT', `${dir}/new.txt`, { body: 'one' });
    expect(first.status).toBe(201);
    const etag1 = first.headers.get('etag');
    expect(etag1).toMatch(/^"[0-9a-f]+"$/);
    expect(first.headers.get('oc-etag')).toBe(etag1);
    const fileId = first.headers.get('oc-fileid');
    expect(fileId).toMatch(/^\d{8}oc[0-9a-z]+$/);
    await nextSecond();
    const second = await dav(fake, 'PUT', `${dir}/new.txt`, { body: 'two!' });
    expect(second.status).toBe(204);
    expect(second.headers.get('etag')).not.toBe(etag1);
    expect(second.headers.get('oc-fileid')).toBe(fileId);
    expect((await fake.readFile(`${dir}/new.txt`))?.toString()).toBe('two!');
  });

  it('keeps the etag for an overwrite within the same second, whatever the size', async () => {
    await nextSecond();
    const first = await dav(fake, 'PUT', `${dir}/same.txt`, { body: 'one' });
    const etag1 = first.headers.get('etag') ?? '';
    const second = await dav(fake, 'PUT', `${dir}/same.txt`, {
      headers: { 'If-Match': etag1 },
      body: 'three',
    });
    expect(second.status).toBe(204);
    expect(second.headers.get('etag')).toBe(etag1);
    // So a stale If-Match still matches within that second, as on Nextcloud.
    const third = await dav(fake, 'PUT', `${dir}/same.txt`, {
      headers: { 'If-Match': etag1 },
      body: 'four',
    });
    expect(third.status).toBe(204);
    expect((await fake.readFile(`${dir}/same.txt`))?.toString()).toBe('four');
  });
});

describe('PUT with If-None-Match: * on an existing file', () => {
  it('is 412 and leaves the file alone', async () => {
    await fake.writeFile(`${dir}/f.txt`, 'keep');
    const res = await dav(fake, 'PUT', `${dir}/f.txt`, {
      headers: { 'If-None-Match': '*' },
      body: 'replace',
    });
    expect(res.status).toBe(412);
    expect(sabreException(await res.text())).toBe('Sabre\\DAV\\Exception\\PreconditionFailed');
    expect((await fake.readFile(`${dir}/f.txt`))?.toString()).toBe('keep');
    const create = await dav(fake, 'PUT', `${dir}/g.txt`, {
      headers: { 'If-None-Match': '*' },
      body: 'new',
    });
    expect(create.status).toBe(201);
  });
});

describe('PUT with a stale If-Match', () => {
  it('is 412 and carries the current ETag; the current ETag succeeds', async () => {
    const created = await dav(fake, 'PUT', `${dir}/f.txt`, { body: 'v1' });
    const etag1 = created.headers.get('etag') ?? '';
    await nextSecond();
    const updated = await dav(fake, 'PUT', `${dir}/f.txt`, {
      headers: { 'If-Match': etag1 },
      body: 'v2',
    });
    expect(updated.status).toBe(204);
    const etag2 = updated.headers.get('etag');
    const stale = await dav(fake, 'PUT', `${dir}/f.txt`, {
      headers: { 'If-Match': etag1 },
      body: 'v3',
    });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('etag')).toBe(etag2);
    expect((await fake.readFile(`${dir}/f.txt`))?.toString()).toBe('v2');
  });

  it('If-Match on a missing file is 412', async () => {
    const res = await dav(fake, 'PUT', `${dir}/missing.txt`, {
      headers: { 'If-Match': '"abc"' },
      body: 'x',
    });
    expect(res.status).toBe(412);
    expect(await fake.exists(`${dir}/missing.txt`)).toBe(false);
  });
});

describe('PUT into a missing parent folder', () => {
  it('is 404 (not 409)', async () => {
    const res = await dav(fake, 'PUT', `${dir}/no/such/f.txt`, { body: 'x' });
    expect(res.status).toBe(404);
    expect(sabreException(await res.text())).toBe('Sabre\\DAV\\Exception\\NotFound');
  });
});

describe('GET with Range', () => {
  it('is 206 with Content-Range', async () => {
    await fake.writeFile(`${dir}/r.txt`, '0123456789');
    const res = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { Range: 'bytes=2-5' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 2-5/10');
    expect(await res.text()).toBe('2345');
    const open = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { Range: 'bytes=7-' } });
    expect(await open.text()).toBe('789');
    const suffix = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { Range: 'bytes=-3' } });
    expect(await suffix.text()).toBe('789');
  });

  it('out of range is 416', async () => {
    await fake.writeFile(`${dir}/r.txt`, '0123456789');
    const res = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { Range: 'bytes=10-20' } });
    expect(res.status).toBe(416);
  });

  it('If-None-Match with the current etag is 304; another etag gets the body', async () => {
    await fake.writeFile(`${dir}/r.txt`, 'abc');
    const full = await dav(fake, 'GET', `${dir}/r.txt`);
    const etag = full.headers.get('etag') ?? '';
    expect(await full.text()).toBe('abc');
    const cached = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { 'If-None-Match': etag } });
    expect(cached.status).toBe(304);
    const other = await dav(fake, 'GET', `${dir}/r.txt`, { headers: { 'If-None-Match': '"x"' } });
    expect(other.status).toBe(200);
  });
});

describe('GET of a folder', () => {
  it('is 200 text/html (a banner page)', async () => {
    const res = await dav(fake, 'GET', `${dir}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('WebDAV');
  });
});

describe('GET of a missing path', () => {
  it('is 404', async () => {
    const res = await dav(fake, 'GET', `${dir}/missing.txt`);
    expect(res.status).toBe(404);
  });
});

describe('MKCOL new / existing / missing parent', () => {
  it('is 201 / 405 / 409', async () => {
    expect((await dav(fake, 'MKCOL', `${dir}/new`)).status).toBe(201);
    expect(await fake.exists(`${dir}/new`)).toBe(true);
    expect((await dav(fake, 'MKCOL', `${dir}/new/`)).status).toBe(405);
    expect((await dav(fake, 'MKCOL', `${dir}/no/such`)).status).toBe(409);
  });
});

const destination = (path: string) => davUrl(fake, path);

describe('MOVE to a free name', () => {
  it('is 201; the file keeps its id', async () => {
    const put = await dav(fake, 'PUT', `${dir}/a.txt`, { body: 'A' });
    const res = await dav(fake, 'MOVE', `${dir}/a.txt`, {
      headers: { Destination: destination(`${dir}/b.txt`), Overwrite: 'F' },
    });
    expect(res.status).toBe(201);
    expect(await fake.exists(`${dir}/a.txt`)).toBe(false);
    expect((await fake.readFile(`${dir}/b.txt`))?.toString()).toBe('A');
    const stat = await dav(fake, 'PROPFIND', `${dir}/b.txt`, {
      headers: { Depth: '0' },
      body: PROPFIND_BODY,
    });
    const id = Number((put.headers.get('oc-fileid') ?? '').slice(0, 8));
    expect(await stat.text()).toContain(`<oc:fileid>${id}</oc:fileid>`);
  });
});

describe('MOVE Overwrite: F onto an existing target', () => {
  it('is 412 and changes nothing', async () => {
    await fake.writeFile(`${dir}/a.txt`, 'A');
    await fake.writeFile(`${dir}/b.txt`, 'B');
    const res = await dav(fake, 'MOVE', `${dir}/a.txt`, {
      headers: { Destination: destination(`${dir}/b.txt`), Overwrite: 'F' },
    });
    expect(res.status).toBe(412);
    expect((await fake.readFile(`${dir}/a.txt`))?.toString()).toBe('A');
    expect((await fake.readFile(`${dir}/b.txt`))?.toString()).toBe('B');
  });

  it.each([['T'], [undefined]])(
    'with Overwrite %s the old target is overwritten and sent to the trashbin',
    async (overwrite) => {
      await fake.writeFile(`${dir}/a.txt`, 'A');
      await fake.writeFile(`${dir}/b.txt`, 'B');
      const headers: Record<string, string> = { Destination: destination(`${dir}/b.txt`) };
      if (overwrite) headers.Overwrite = overwrite;
      const res = await dav(fake, 'MOVE', `${dir}/a.txt`, { headers });
      expect(res.status).toBe(204);
      expect((await fake.readFile(`${dir}/b.txt`))?.toString()).toBe('A');
      expect(fake.trashed()).toContain(`${dir}/b.txt`);
    },
  );
});

describe('MOVE into a missing folder / into its own subtree', () => {
  it('is 409 / 409', async () => {
    await fake.writeFile(`${dir}/x/f.txt`, 'f');
    const missing = await dav(fake, 'MOVE', `${dir}/x/f.txt`, {
      headers: { Destination: destination(`${dir}/nope/f.txt`), Overwrite: 'F' },
    });
    expect(missing.status).toBe(409);
    const subtree = await dav(fake, 'MOVE', `${dir}/x`, {
      headers: { Destination: destination(`${dir}/x/inner`), Overwrite: 'F' },
    });
    expect(subtree.status).toBe(409);
    expect(await fake.exists(`${dir}/x/f.txt`)).toBe(true);
  });
});

describe('MOVE whose source and destination differ only in Unicode normalisation', () => {
  const nfc = 'Caf\u00e9.txt';
  const nfdEncoded = encodeURIComponent('Cafe\u0301.txt');

  it('with Overwrite: F is 412 (the target exists: it is the source) and moves nothing', async () => {
    await fake.writeFile(`${dir}/${nfc}`, 'coffee');
    const res = await dav(fake, 'MOVE', `${dir}/${encodeURIComponent(nfc)}`, {
      headers: { Destination: destination(`${dir}/${nfdEncoded}`), Overwrite: 'F' },
    });
    expect(res.status).toBe(412);
    expect((await fake.readFile(`${dir}/${nfc}`))?.toString()).toBe('coffee');
    expect(fake.trashed()).not.toContain(`${dir}/${nfc}`);
  });

  it('without Overwrite is 404 and the source is already gone to the trashbin', async () => {
    await fake.writeFile(`${dir}/${nfc}`, 'coffee');
    const res = await dav(fake, 'MOVE', `${dir}/${encodeURIComponent(nfc)}`, {
      headers: { Destination: destination(`${dir}/${nfdEncoded}`) },
    });
    expect(res.status).toBe(404);
    expect(await fake.exists(`${dir}/${nfc}`)).toBe(false);
    expect(fake.trashed()).toContain(`${dir}/${nfc}`);
  });
});

describe('DELETE', () => {
  it('is 204, a repeat 404, and the item appears in the trashbin and can be restored', async () => {
    await fake.writeFile(`${dir}/d.txt`, 'bye');
    expect((await dav(fake, 'DELETE', `${dir}/d.txt`)).status).toBe(204);
    expect((await dav(fake, 'DELETE', `${dir}/d.txt`)).status).toBe(404);
    expect(fake.trashed()).toContain(`${dir}/d.txt`);

    const trashUrl = `${fake.url}/remote.php/dav/trashbin/${fake.user}/trash/`;
    const auth = 'Basic ' + Buffer.from(`${fake.user}:${fake.password}`).toString('base64');
    const list = await fetch(trashUrl, {
      method: 'PROPFIND',
      headers: { Authorization: auth, Depth: '1' },
      body: `<d:propfind xmlns:d="DAV:" xmlns:nc="http://nextcloud.org/ns"><d:prop><nc:trashbin-original-location/><nc:trashbin-filename/></d:prop></d:propfind>`,
    });
    expect(list.status).toBe(207);
    const items = responses(await list.text());
    expect(items[0]?.href).toBe(`/remote.php/dav/trashbin/${fake.user}/trash/`);
    const item = items.find((r) => r.xml.includes(`>${dir}/d.txt<`));
    expect(item?.href).toMatch(/\/trash\/d\.txt\.d\d+$/);

    const restore = await fetch(`${fake.url}${item?.href ?? ''}`, {
      method: 'MOVE',
      headers: {
        Authorization: auth,
        Destination: `${fake.url}/remote.php/dav/trashbin/${fake.user}/restore/${item?.href.split('/').pop() ?? ''}`,
      },
    });
    expect(restore.status).toBe(201);
    expect((await fake.readFile(`${dir}/d.txt`))?.toString()).toBe('bye');
    expect(fake.trashed()).not.toContain(`${dir}/d.txt`);
  });

  it('capabilities report files.undelete: true while the trashbin is on', async () => {
    const caps = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
      headers: {
        'OCS-APIRequest': 'true',
        Authorization: 'Basic ' + Buffer.from(`${fake.user}:${fake.password}`).toString('base64'),
      },
    });
    expect(caps.status).toBe(200);
    const json = (await caps.json()) as {
      ocs: { data: { capabilities: { files: { undelete?: boolean } } } };
    };
    expect(json.ocs.data.capabilities.files.undelete).toBe(true);
  });

  it('with the trashbin off the file is really deleted', async () => {
    fake.faults.trashbin = false;
    await fake.writeFile(`${dir}/gone.txt`, 'x');
    expect((await dav(fake, 'DELETE', `${dir}/gone.txt`)).status).toBe(204);
    expect(await fake.exists(`${dir}/gone.txt`)).toBe(false);
    expect(fake.trashed()).not.toContain(`${dir}/gone.txt`);
  });
});
