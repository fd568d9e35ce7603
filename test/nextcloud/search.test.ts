/**
 * NextcloudClient.search against the fake Nextcloud (real sockets), and the defence
 * against results from outside the folder, against a scripted server that sends them.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../broker/base/log.js';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { decodeHref, parseMultistatus } from '../../broker/nextcloud/multistatus.js';
import { resultsBelow } from '../../broker/nextcloud/search.js';
import { DAV, rejectsWith, startRig, type Rig } from './helpers.js';

const ORIGIN = 'http://127.0.0.1:8080';

function reply(hrefs: readonly string[]): string {
  const responses = hrefs
    .map(
      (href) =>
        `<d:response><d:href>${href}</d:href><d:propstat><d:prop><d:resourcetype/>` +
        '<d:getcontentlength>3</d:getcontentlength></d:prop>' +
        '<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>',
    )
    .join('');
  return `<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">${responses}</d:multistatus>`;
}

function below(folder: string, hrefs: readonly string[]) {
  const segments = decodeHref(`${DAV}/${folder}`, ORIGIN);
  return resultsBelow(parseMultistatus(reply(hrefs)), folder, segments, ORIGIN);
}

describe('results from outside the searched folder (the server must never send them)', () => {
  it('a search scoped to Docs never returns Docs2/…', () => {
    const { entries, outside } = below('Docs', [
      `${DAV}/Docs2/report.txt`,
      `${DAV}/Docs/report.txt`,
    ]);
    expect(entries.map((e) => e.path)).toEqual(['Docs/report.txt']);
    expect(outside).toEqual([`${DAV}/Docs2/report.txt`]);
  });

  it.each([
    ['the parent', `${DAV}/report.txt`],
    ['the folder itself', `${DAV}/Docs/`],
    ['a sibling sharing the prefix', `${DAV}/Docs.bak/x`],
    ["another user's files", '/remote.php/dav/files/bob/Docs/report.txt'],
    ['the trash bin', '/remote.php/dav/trashbin/alice/trash/Docs/x.d1'],
    ['an encoded slash', `${DAV}/Docs%2F..%2FOther/x`],
    ['a dot segment', `${DAV}/Docs/../Other/x`],
    ['a malformed escape', `${DAV}/Docs/%zz`],
    ['another server', `http://evil.example${DAV}/Docs/x`],
    ['a relative href', 'Docs/x'],
  ])('drops %s', (_what, href) => {
    const { entries, outside } = below('Docs', [href, `${DAV}/Docs/kept.txt`]);
    expect(entries.map((e) => e.path)).toEqual(['Docs/kept.txt']);
    expect(outside).toEqual([href]);
  });

  it('keeps what is below, at any depth, with the path from the instance root in NFC', () => {
    const { entries, outside } = below('Docs', [
      `${DAV}/Docs/a/b/deep.txt`,
      `${ORIGIN}${DAV}/Docs/abs.txt`,
      `${DAV}/Docs/Re%cc%81sume%cc%81.txt`,
    ]);
    expect(outside).toEqual([]);
    expect(entries.map((e) => [e.name, e.path])).toEqual([
      ['deep.txt', 'Docs/a/b/deep.txt'],
      ['abs.txt', 'Docs/abs.txt'],
      ['R\u00e9sum\u00e9.txt', 'Docs/R\u00e9sum\u00e9.txt'],
    ]);
  });

  it('below the root everything of the account is inside, nothing else', () => {
    const root = resultsBelow(
      parseMultistatus(reply([`${DAV}/a.txt`, '/remote.php/dav/files/alicex/a.txt'])),
      '',
      decodeHref(`${DAV}/`, ORIGIN),
      ORIGIN,
    );
    expect(root.entries.map((e) => e.path)).toEqual(['a.txt']);
    expect(root.outside).toHaveLength(1);
  });
});

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
  for (const path of [
    'Docs/Report 2024.txt',
    'Docs/report-final.TXT',
    'Docs/sub/deep report.txt',
    'Docs/Réport.txt',
    'Docs/a_b.txt',
    'Docs/axb.txt',
    'Docs/100%.txt',
    'Docs/doc1.txt',
    'Docs/doc2.txt',
    'Docs2/report.txt',
    'Pages/p1.txt',
    'Pages/p2.txt',
    'Pages/p3.txt',
    'Pages/p4.txt',
    'Pages/p5.txt',
  ])
    await rig.fake.writeFile(path, 'abc');
  await rig.fake.mkdir('Docs/Report folder');
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

describe('search on the fake Nextcloud', () => {
  it('looks at the folder, then sends one SEARCH to the DAV root', async () => {
    await rig.client.search('Docs', 'report');
    expect(rig.sent()).toEqual([`PROPFIND ${DAV}/Docs`, 'SEARCH /remote.php/dav/']);
  });

  it('names, kinds, paths and sizes of the matches below the folder, in name order', async () => {
    const page = await rig.client.search('Docs', 'report');
    expect(page.entries.map((e) => [e.path, e.kind, e.size])).toEqual([
      ['Docs/Report 2024.txt', 'file', 3],
      ['Docs/Report folder', 'folder', null],
      ['Docs/sub/deep report.txt', 'file', 3],
      ['Docs/report-final.TXT', 'file', 3],
    ]);
    expect(page.next).toBeUndefined();
    expect(page.outside).toBe(0);
  });

  it('matches % and _ literally', async () => {
    expect((await rig.client.search('Docs', 'a_b')).entries.map((e) => e.name)).toEqual([
      'a_b.txt',
    ]);
    expect((await rig.client.search('Docs', '%')).entries.map((e) => e.name)).toEqual(['100%.txt']);
    expect((await rig.client.search('Docs', '_')).entries.map((e) => e.name)).toEqual(['a_b.txt']);
  });

  it('the whole account from the root', async () => {
    const page = await rig.client.search('', 'report.txt');
    expect(page.entries.map((e) => e.path)).toEqual([
      'Docs/sub/deep report.txt',
      'Docs2/report.txt',
    ]);
  });

  it('pages with a cursor, one more result asked than shown', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await rig.client.search('Pages', 'p', cursor, 2);
      seen.push(...page.entries.map((e) => e.name));
      cursor = page.next;
      pages += 1;
    } while (cursor !== undefined);
    expect(seen).toEqual(['p1.txt', 'p2.txt', 'p3.txt', 'p4.txt', 'p5.txt']);
    expect(pages).toBe(3);
  });

  it('a folder whose own name matches loses no result (its file id is left out)', async () => {
    // "Docs" matches "doc": Nextcloud would count it in nresults, then drop it, and the
    // one result more than a page would not come back.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await rig.client.search('Docs', 'doc', cursor, 1);
      seen.push(...page.entries.map((e) => e.name));
      cursor = page.next;
    } while (cursor !== undefined);
    expect(seen).toEqual(['doc1.txt', 'doc2.txt']);
  });

  it('a cursor belongs to one folder and one term', async () => {
    const first = await rig.client.search('Pages', 'p', undefined, 2);
    const cursor = first.next as string;
    await rejectsWith(rig.client.search('Pages', 'p1', cursor, 2), 'bad_cursor', false);
    await rejectsWith(rig.client.search('Docs', 'p', cursor, 2), 'bad_cursor');
    await rejectsWith(rig.client.list('Pages', cursor), 'bad_cursor');
    const listCursor = (await rig.client.list('Pages', undefined, 2)).next as string;
    await rejectsWith(rig.client.search('Pages', 'p', listCursor, 2), 'bad_cursor');
  });

  it('a missing folder is not_found, a file not_folder, before any SEARCH', async () => {
    const missing = await rejectsWith(rig.client.search('Missing', 'x'), 'not_found');
    expect(missing.message).toContain("'Missing' does not exist");
    const file = await rejectsWith(rig.client.search('Docs/a_b.txt', 'x'), 'not_folder');
    expect(file.message).toMatch(/is a file, not a folder: search the folder that holds it/);
    expect(rig.sent().some((r) => r.startsWith('SEARCH'))).toBe(false);
  });

  it('refuses a page size out of range, sending nothing', async () => {
    for (const size of [0, 201, 1.5])
      await rejectsWith(rig.client.search('Docs', 'x', undefined, size), 'invalid_argument');
    expect(rig.sent()).toEqual([]);
  });
});

describe('a server that answers with results from outside the folder', () => {
  let server: Server;
  let url: string;
  const folder = reply([`${DAV}/Docs/`]).replace(
    '<d:resourcetype/>',
    '<d:resourcetype><d:collection/></d:resourcetype><oc:fileid xmlns:oc="http://owncloud.org/ns">7</oc:fileid>',
  );
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      const body =
        req.method === 'PROPFIND'
          ? folder
          : reply([
              `${DAV}/Docs/in.txt`,
              `${DAV}/Docs/%c3%a9t%c3%a9.txt`,
              `${DAV}/Docs2/leak.txt`,
              `${DAV}/Secret/leak.txt`,
            ]);
      res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("keeps only what the broker's rule matches, whatever the database matched", async () => {
    // MySQL compares without accents: it would find "été.txt" for "ete".
    const client = new NextcloudClient({
      name: 'odd',
      url,
      username: 'alice',
      app_password: 'Odd-AppPassword-0123456789',
    });
    try {
      expect((await client.search('Docs', 'ete')).entries).toEqual([]);
      expect((await client.search('Docs', 't\u00e9')).entries.map((e) => e.name)).toEqual([
        '\u00e9t\u00e9.txt',
      ]);
    } finally {
      client.close();
    }
  });

  it('drops them, counts them and logs them', async () => {
    const logger = memoryLogger();
    const client = new NextcloudClient(
      { name: 'odd', url, username: 'alice', app_password: 'Odd-AppPassword-0123456789' },
      { logger },
    );
    try {
      const page = await client.search('Docs', 'leak');
      expect(page.entries).toEqual([]);
      expect(page.outside).toBe(2);
      const inside = await client.search('Docs', 'in');
      expect(inside.entries.map((e) => e.path)).toEqual(['Docs/in.txt']);
    } finally {
      client.close();
    }
    const line = logger.lines.find((l) => l.includes('outside the folder'));
    expect(line).toContain('"dropped":2');
    expect(line).toContain('Docs2/leak.txt');
  });
});
