/** Facts file, "## Names and encoding": one test per statement. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, rawRequest, responses, sabreException } from './helpers.js';

let fake: FakeNextcloud;
const base = () => `/remote.php/dav/files/${fake.user}`;

beforeAll(async () => {
  fake = await startFakeNextcloud();
  await fake.mkdir('n');
});
afterAll(async () => {
  await fake.close();
});

const NFC = 'R\u00e9sum\u00e9.txt';
const NFD = 'Re\u0301sume\u0301.txt';

describe('Names are stored in NFC; a request in NFD reaches the NFC file', () => {
  it('PUT in NFD stores the NFC name', async () => {
    const res = await dav(fake, 'PUT', `n/${encodeURIComponent(NFD)}`, { body: 'v1' });
    expect(res.status).toBe(201);
    expect((await fake.readFile(`n/${NFC}`))?.toString()).toBe('v1');
  });

  it('GET and PROPFIND in NFD reach it; a PUT in NFD overwrites it (204)', async () => {
    await fake.writeFile(`n/${NFC}`, 'v1');
    const get = await dav(fake, 'GET', `n/${encodeURIComponent(NFD)}`);
    expect(await get.text()).toBe('v1');
    const stat = await dav(fake, 'PROPFIND', `n/${encodeURIComponent(NFD)}`, {
      headers: { Depth: '0' },
    });
    expect(stat.status).toBe(207);
    const put = await dav(fake, 'PUT', `n/${encodeURIComponent(NFD)}`, { body: 'v2' });
    expect(put.status).toBe(204);
    expect((await fake.readFile(`n/${NFC}`))?.toString()).toBe('v2');
  });
});

describe("Listings echo the request's spelling in href, NFC in displayname", () => {
  it('a folder asked for in NFD lists with NFD hrefs and NFC displaynames', async () => {
    const folderNfc = 'Caf\u00e9';
    const folderNfd = 'Cafe\u0301';
    await fake.writeFile(`${folderNfc}/x.txt`, 'x');
    const res = await dav(fake, 'PROPFIND', `${encodeURIComponent(folderNfd)}/`, {
      headers: { Depth: '1' },
      body: '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname/></d:prop></d:propfind>',
    });
    const rs = responses(await res.text());
    expect(rs[0]?.href).toBe(`${base()}/Cafe%cc%81/`);
    expect(rs[0]?.xml).toContain(`<d:displayname>${folderNfc}</d:displayname>`);
    expect(rs[1]?.href).toBe(`${base()}/Cafe%cc%81/x.txt`);
  });
});

describe('Hrefs use lowercase percent-encoding, leave ":" unencoded and encode "+" as %2b', () => {
  it('encodes é as %c3%a9, keeps ":", turns "+" into %2b and space into %20', async () => {
    await fake.writeFile('n/a:b+c d\u00e9.txt', 'x');
    const res = await dav(fake, 'PROPFIND', 'n/', { headers: { Depth: '1' } });
    const hrefs = responses(await res.text()).map((r) => r.href);
    expect(hrefs).toContain(`${base()}/n/a:b%2bc%20d%c3%a9.txt`);
  });
});

describe('%2F in a path: 404 from Apache', () => {
  it('answers an HTML 404 without reaching Nextcloud', async () => {
    const res = await rawRequest(fake, 'GET', `${base()}/n%2Fx.txt`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('%5C, control characters, \\n: 400 InvalidPath', () => {
  it.each([['%5C'], ['%01'], ['%0A'], ['%1F']])('%s', async (esc) => {
    const res = await rawRequest(fake, 'PUT', `${base()}/n/a${esc}b.txt`, {}, 'x');
    expect(res.status).toBe(400);
    expect(sabreException(res.body)).toBe('OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath');
  });
});

describe('A literal .. is resolved by Apache; %2E%2E: 400', () => {
  it('a literal .. reaches the resolved path', async () => {
    await fake.writeFile('n/dots.txt', 'resolved');
    const res = await rawRequest(fake, 'GET', `${base()}/n/sub/../dots.txt`);
    expect(res.status).toBe(200);
    expect(res.body).toBe('resolved');
  });

  it('%2E%2E is 400', async () => {
    const res = await rawRequest(fake, 'GET', `${base()}/n/%2E%2E/dots.txt`);
    expect(res.status).toBe(400);
  });
});

describe('%FF is silently stored as ÿ', () => {
  it('PUT of %FF creates ÿ', async () => {
    const res = await rawRequest(fake, 'PUT', `${base()}/n/%FF.txt`, {}, 'y');
    expect(res.status).toBe(201);
    expect((await fake.readFile('n/\u00ff.txt'))?.toString()).toBe('y');
  });
});

describe('Trailing spaces and dots, Windows-reserved names are accepted', () => {
  it.each([['trailing '], ['trailing.'], ['CON']])('%j', async (name) => {
    const res = await dav(fake, 'PUT', `n/${encodeURIComponent(name)}`, { body: 'ok' });
    expect(res.status).toBe(201);
    expect(await fake.exists(`n/${name}`)).toBe(true);
  });
});

describe.each([
  [34, 500, 'OCP\\Files\\ForbiddenException', 400, 'InvalidPath'],
  [29, 403, 'Sabre\\DAV\\Exception\\Forbidden', 423, 'FileLocked'],
] as const)('Nextcloud %i: .htaccess and *.part', (series, htaccess, htEx, part, partEx) => {
  let old: FakeNextcloud;
  beforeAll(async () => {
    old = await startFakeNextcloud({ series });
  });
  afterAll(async () => {
    await old.close();
  });

  it(`PUT of .htaccess is ${htaccess} and nothing is written`, async () => {
    const res = await dav(old, 'PUT', '.htaccess', { body: 'Deny from all' });
    expect(res.status).toBe(htaccess);
    expect(sabreException(await res.text())).toBe(htEx);
    expect(await old.exists('.htaccess')).toBe(false);
  });

  it(`PUT of x.part is ${part}`, async () => {
    const res = await dav(old, 'PUT', 'upload.part', { body: 'x' });
    expect(res.status).toBe(part);
    expect(sabreException(await res.text())).toContain(partEx);
    expect(await old.exists('upload.part')).toBe(false);
  });
});

describe('Names over 250 bytes: 400', () => {
  it('a 251-byte name is 400 for PUT, MKCOL and GET', async () => {
    const name = 'a'.repeat(251);
    expect((await dav(fake, 'PUT', `n/${name}`, { body: 'x' })).status).toBe(400);
    expect((await dav(fake, 'MKCOL', `n/${name}`)).status).toBe(400);
    expect((await dav(fake, 'GET', `n/${name}`)).status).toBe(400);
  });

  it('counts bytes, not characters (126 × "é" = 252 bytes)', async () => {
    const res = await dav(fake, 'MKCOL', `n/${encodeURIComponent('\u00e9'.repeat(126))}`);
    expect(res.status).toBe(400);
  });
});

describe('PUT of names of 228–250 bytes: 500 on 29 (its .part temp name), 201 on 34', () => {
  it.each([[228], [250]])('%i bytes is 500 on 29 and nothing is written', async (len) => {
    const old = await startFakeNextcloud({ series: 29 });
    try {
      const name = 'b'.repeat(len);
      const res = await dav(old, 'PUT', name, { body: 'x' });
      expect(res.status).toBe(500);
      expect(await old.exists(name)).toBe(false);
    } finally {
      await old.close();
    }
  });

  it('a 250-byte name uploads on 34', async () => {
    expect((await dav(fake, 'PUT', `n/${'e'.repeat(250)}`, { body: 'x' })).status).toBe(201);
  });

  it('227 bytes works, and a 250-byte folder name works', async () => {
    expect((await dav(fake, 'PUT', `n/${'c'.repeat(227)}`, { body: 'x' })).status).toBe(201);
    expect((await dav(fake, 'MKCOL', `n/${'d'.repeat(250)}`)).status).toBe(201);
  });
});

describe('URL paths over ~4 KB: 403 from Apache', () => {
  it('a 5000-byte path is 403; a 4000-byte one is not', async () => {
    const long = await rawRequest(fake, 'GET', `${base()}/${'x/'.repeat(2500)}`);
    expect(long.status).toBe(403);
    const shorter = await rawRequest(fake, 'GET', `${base()}/${'x/'.repeat(1980)}`);
    expect(shorter.status).toBe(404);
  });
});
