/**
 * From Nextcloud 33 on, new ids are Snowflake ids that pass 2^53, where a JavaScript
 * number can no longer hold them. The fake shows every file id plus 2^60 here: a client
 * that parsed one into a number would send a different id back. The broker's one round
 * trip of a file id is search, which excludes the searched folder by its id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';

const BASE = 2n ** 60n;
let fake: FakeNextcloud;
let client: NextcloudClient;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: 'Zq7rT-kP2mX-9vLwB-a+b/c%d', fileIdBase: BASE });
  client = new NextcloudClient({
    name: 'home',
    url: fake.url,
    username: fake.user,
    app_password: fake.password,
  });
  await fake.writeFile('match/match1.txt', 'x');
  await fake.writeFile('match/match2.txt', 'x');
  await fake.writeFile('match/other.txt', 'y');
});
afterAll(async () => {
  client.close();
  await fake.close();
});

describe('attack: an id past 2^53 rounded by a JavaScript number', () => {
  it('the fake really shows ids past 2^53 (the test is not vacuous)', async () => {
    const res = await fetch(`${fake.url}/remote.php/dav/files/${fake.user}/match`, {
      method: 'PROPFIND',
      headers: {
        Depth: '0',
        Authorization: `Basic ${Buffer.from(`${fake.user}:${fake.password}`).toString('base64')}`,
      },
      body: '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>',
    });
    const id = /<oc:fileid>(\d+)<\/oc:fileid>/.exec(await res.text())?.[1] ?? '';
    expect(BigInt(id)).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));
    expect(String(Number(id))).not.toBe(id);
  });

  it('search sends the folder id back exactly: the folder does not take a place on the page', async () => {
    // The server counts the folder as a row until the page is cut, unless the query
    // excludes it by its id: with a wrong id, it takes the row that tells a next page
    // exists, and the second file is never found.
    const first = await client.search('match', 'match', undefined, 1);
    expect(first.entries.map((e) => e.path)).toEqual(['match/match1.txt']);
    expect(first.next).toBeDefined();
    const second = await client.search('match', 'match', first.next, 1);
    expect(second.entries.map((e) => e.path)).toEqual(['match/match2.txt']);
  });
});
