/**
 * docs/nextcloud-behaviour.md, "Search": the fake answers WebDAV SEARCH as Nextcloud 29
 * on SQLite does, with plain fetch (no client library involved).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { basic, responses, sabreException } from './helpers.js';

let fake: FakeNextcloud;
let base: string;

beforeAll(async () => {
  fake = await startFakeNextcloud();
  base = `/remote.php/dav/files/${fake.user}`;
  for (const path of [
    'Docs/Report 2024.txt',
    'Docs/report-final.TXT',
    'Docs/sub/deep report.txt',
    'Docs/Réport.txt',
    'Docs/été.txt',
    'Docs/a_b.txt',
    'Docs/axb.txt',
    'Docs/100%.txt',
    'Docs2/report.txt',
    'Other/report.txt',
    'Ties/b/same.txt',
    'Ties/a/same.txt',
    'Ties/same.txt',
    'Sp ace/report.txt',
  ])
    await fake.writeFile(path, 'x');
  await fake.mkdir('Docs/Report folder');
});
afterAll(async () => {
  await fake.close();
});

interface Search {
  scope: string;
  literal?: string;
  where?: string;
  order?: boolean;
  limit?: [number, number?];
  depth?: string;
  url?: string;
}

function body(s: Search): string {
  const where =
    s.where ??
    `<d:like><d:prop><d:displayname/></d:prop><d:literal>${s.literal ?? '%'}</d:literal></d:like>`;
  const order =
    s.order === false
      ? ''
      : '<d:orderby><d:order><d:prop><d:displayname/></d:prop><d:ascending/></d:order></d:orderby>';
  const [n, first] = s.limit ?? [];
  const limit =
    n === undefined
      ? ''
      : `<d:limit><d:nresults>${n}</d:nresults>${
          first === undefined
            ? ''
            : `<sd:firstresult xmlns:sd="https://github.com/icewind1991/SearchDAV/ns">${first}</sd:firstresult>`
        }</d:limit>`;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>' +
    '<d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:basicsearch>' +
    '<d:select><d:prop><d:displayname/><d:getcontentlength/><oc:fileid/></d:prop></d:select>' +
    `<d:from><d:scope><d:href>${s.scope}</d:href><d:depth>${s.depth ?? 'infinity'}</d:depth></d:scope></d:from>` +
    `<d:where>${where}</d:where>${order}${limit}</d:basicsearch></d:searchrequest>`
  );
}

async function search(s: Search): Promise<{ status: number; text: string; hrefs: string[] }> {
  const res = await fetch(`${fake.url}${s.url ?? '/remote.php/dav/'}`, {
    method: 'SEARCH',
    headers: { Authorization: basic(fake.user, fake.password), 'Content-Type': 'text/xml' },
    body: body(s),
  });
  const text = await res.text();
  return { status: res.status, text, hrefs: responses(text).map((r) => r.href) };
}

const names = (hrefs: string[]) => hrefs.map((h) => h.slice(base.length + 1));

describe('where SEARCH is answered', () => {
  it('on the DAV root, with or without the trailing slash', async () => {
    for (const url of ['/remote.php/dav/', '/remote.php/dav']) {
      expect((await search({ scope: `/files/${fake.user}/Docs`, url })).status).toBe(207);
    }
  });

  it('anywhere else 501 NotImplemented', async () => {
    const res = await search({ scope: `/files/${fake.user}/Docs`, url: `${base}/Docs` });
    expect(res.status).toBe(501);
    expect(sabreException(res.text)).toBe('Sabre\\DAV\\Exception\\NotImplemented');
  });

  it('needs credentials', async () => {
    const res = await fetch(`${fake.url}/remote.php/dav/`, { method: 'SEARCH', body: '' });
    expect(res.status).toBe(401);
  });
});

describe('the scope', () => {
  it('is everything below the folder, never the folder itself, never Docs2/ or Other/', async () => {
    const res = await search({ scope: `/files/${fake.user}/Docs`, literal: '%report%' });
    expect(res.status).toBe(207);
    // In name order (bytes), wherever they are below the folder.
    expect(names(res.hrefs)).toEqual([
      'Docs/Report%202024.txt',
      'Docs/Report%20folder/',
      'Docs/sub/deep%20report.txt',
      'Docs/report-final.TXT',
    ]);
  });

  it('the whole account from /files/<user>, with or without the trailing slash', async () => {
    for (const scope of [`/files/${fake.user}`, `/files/${fake.user}/`]) {
      const res = await search({ scope, literal: 'report.txt' });
      expect(names(res.hrefs)).toEqual([
        'Docs2/report.txt',
        'Other/report.txt',
        'Sp%20ace/report.txt',
      ]);
    }
  });

  it('is not percent-decoded: the raw name reaches the folder, the encoded one is 404', async () => {
    expect(
      (await search({ scope: `/files/${fake.user}/Sp ace`, literal: '%' })).hrefs,
    ).toHaveLength(1);
    const encoded = await search({ scope: `/files/${fake.user}/Sp%20ace`, literal: '%' });
    expect(encoded.status).toBe(404);
  });

  it.each([
    ['a missing folder', 'Missing', 404, 'Sabre\\DAV\\Exception\\NotFound'],
    ['a folder in the wrong case', 'docs', 404, 'Sabre\\DAV\\Exception\\NotFound'],
    ['a file', 'Docs/a_b.txt', 500, 'InvalidArgumentException'],
    ['a dot segment', 'Docs/../Other', 400, 'OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath'],
  ])('%s (%s) answers %i', async (_what, path, status, exception) => {
    const res = await search({ scope: `/files/${fake.user}/${path}` });
    expect(res.status).toBe(status);
    expect(sabreException(res.text)).toBe(exception);
  });

  it('an unknown user is 404 (the fake knows one user), /files 500, the DAV URL as a scope 404', async () => {
    const unknown = await search({ scope: '/files/someone-else' });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('Principal with name someone-else not found');
    expect((await search({ scope: '/files' })).status).toBe(500);
    expect((await search({ scope: `/remote.php/dav/files/${fake.user}/Docs` })).status).toBe(404);
  });

  it('a body that is not XML is not taken (501)', async () => {
    const res = await fetch(`${fake.url}/remote.php/dav/`, {
      method: 'SEARCH',
      headers: {
        Authorization: basic(fake.user, fake.password),
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: body({ scope: `/files/${fake.user}/Docs` }),
    });
    expect(res.status).toBe(501);
  });

  it('an NFD spelling reaches the NFC folder; depth is ignored', async () => {
    const nfd = await search({ scope: `/files/${fake.user}/Docs`, literal: '%e\u0301t%' });
    expect(nfd.hrefs).toEqual([]);
    for (const depth of ['0', '1'])
      expect(
        names((await search({ scope: `/files/${fake.user}/Docs`, literal: 'deep%', depth })).hrefs),
      ).toEqual(['Docs/sub/deep%20report.txt']);
  });
});

describe('matching (SQLite LIKE)', () => {
  const inDocs = async (literal: string) => {
    const res = await search({ scope: `/files/${fake.user}/Docs`, literal });
    expect(res.status).toBe(207);
    return names(res.hrefs);
  };

  it('ASCII letters ignore case; accents count; non-ASCII case does not fold', async () => {
    expect(await inDocs('%RÉPORT%')).toEqual([]);
    expect(await inDocs('%réport%')).toEqual(['Docs/R%c3%a9port.txt']);
    expect(await inDocs('%ete%')).toEqual([]);
    expect(await inDocs('%ÉTÉ%')).toEqual([]);
  });

  it('_ is one character and % any run, unless escaped with a backslash', async () => {
    expect(await inDocs('%a_b%')).toEqual(['Docs/a_b.txt', 'Docs/axb.txt']);
    expect(await inDocs('%a\\_b%')).toEqual(['Docs/a_b.txt']);
    expect(await inDocs('%\\%%')).toEqual(['Docs/100%25.txt']);
    expect(await inDocs('%a\\\\_b%')).toEqual([]);
  });

  it('without % only the whole name matches', async () => {
    expect(await inDocs('report')).toEqual([]);
    expect(await inDocs('REPORT-final.txt')).toEqual(['Docs/report-final.TXT']);
  });

  it('a like on a property that cannot be searched is 400', async () => {
    const res = await search({
      scope: `/files/${fake.user}/Docs`,
      where: '<d:like><d:prop><d:getetag/></d:prop><d:literal>%</d:literal></d:like>',
    });
    expect(res.status).toBe(400);
  });

  it('and, not, eq on oc:fileid, is-collection', async () => {
    const all = await search({ scope: `/files/${fake.user}/Docs`, literal: '%report%' });
    // The first result is "Report 2024.txt"; leave it out by its file id.
    const firstId = /<oc:fileid>(\d+)<\/oc:fileid>/.exec(all.text)?.[1] ?? '';
    const res = await search({
      scope: `/files/${fake.user}/Docs`,
      where:
        '<d:and><d:like><d:prop><d:displayname/></d:prop><d:literal>%report%</d:literal></d:like>' +
        `<d:not><d:eq><d:prop><oc:fileid/></d:prop><d:literal>${firstId}</d:literal></d:eq></d:not>` +
        '<d:not><d:is-collection/></d:not></d:and>',
    });
    expect(names(res.hrefs)).toEqual(['Docs/sub/deep%20report.txt', 'Docs/report-final.TXT']);
  });
});

describe('order and pages', () => {
  it('names in byte order, equal names in creation (file id) order', async () => {
    const res = await search({ scope: `/files/${fake.user}/Ties`, literal: 'same.txt' });
    expect(names(res.hrefs)).toEqual(['Ties/b/same.txt', 'Ties/a/same.txt', 'Ties/same.txt']);
  });

  it('nresults and firstresult cut the ordered rows', async () => {
    const page = (n: number, first?: number) =>
      search({ scope: `/files/${fake.user}/Ties`, literal: 'same.txt', limit: [n, first] });
    expect(names((await page(2)).hrefs)).toEqual(['Ties/b/same.txt', 'Ties/a/same.txt']);
    expect(names((await page(2, 2)).hrefs)).toEqual(['Ties/same.txt']);
    expect((await page(0)).hrefs).toEqual([]);
    expect((await page(2, 3)).hrefs).toEqual([]);
  });

  it('a folder matching its own search takes a place in the page but is never returned', async () => {
    // "Docs" matches %doc%; in byte order it comes first.
    await fake.writeFile('Docs/doc1.txt', 'x');
    const res = await search({ scope: `/files/${fake.user}/Docs`, literal: '%doc%', limit: [1] });
    expect(res.status).toBe(207);
    expect(res.hrefs).toEqual([]);
    const two = await search({ scope: `/files/${fake.user}/Docs`, literal: '%doc%', limit: [2] });
    expect(names(two.hrefs)).toEqual(['Docs/doc1.txt']);
  });

  it('folders carry getcontentlength in a 404 propstat, as in a PROPFIND', async () => {
    const res = await search({ scope: `/files/${fake.user}/Docs`, literal: 'Report folder' });
    const [folder] = responses(res.text);
    expect(folder?.href).toBe(`${base}/Docs/Report%20folder/`);
    expect(folder?.xml).toMatch(
      /<d:getcontentlength\/><\/d:prop><d:status>HTTP\/1.1 404 Not Found/,
    );
  });
});
