/**
 * `search` through the MCP client and the daemon on the real Nextcloud: grants,
 * refusals, discovery, literal matching of % and _, what matching means on the real
 * database, a received share below the folder, and paging across a broker restart.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useRealRig } from './rig.js';
import { send } from './http.js';
import { call } from '../../support/mcp.js';
import { H, startBrokerOn } from '../../support/daemon.js';

const rig = useRealRig();

type Found = { name: string; path: string; kind: string; size?: number | null };

async function search(path: string, query: string, instance = 'personal') {
  return call(rig.agent, 'search', { instance, path, query });
}

const paths = (answer: Record<string, unknown>) => (answer.entries as Found[]).map((e) => e.path);

beforeAll(async () => {
  for (const path of [
    'Docs/Report 2024.txt',
    'Docs/report-final.TXT',
    'Docs/sub/deep report.txt',
    'Docs/R\u00e9port.txt',
    'Docs/\u00e9t\u00e9.txt',
    'Docs/a_b.txt',
    'Docs/axb.txt',
    'Docs/100%.txt',
    'Docs2/report.txt',
    'Other/report.txt',
  ])
    await rig.owner.writeFile(path, 'five!');
  await rig.owner.mkdirs('Docs/Report folder');
  await rig.broker.grant([{ path: 'Docs', mode: 'read' }]);
});

describe('search with a read grant', () => {
  it('finds names below the folder at any depth, in name order, never Docs2/ or Other/', async () => {
    const answer = await search('Docs', 'report');
    expect(answer).toMatchObject({ status: 'ok', path: 'Docs', discovery: false });
    expect(answer.message).toContain('names were matched, not file contents');
    expect(paths(answer)).toEqual([
      'Docs/Report 2024.txt',
      'Docs/Report folder',
      'Docs/sub/deep report.txt',
      'Docs/report-final.TXT',
    ]);
    const [first] = answer.entries as Found[];
    expect(first).toMatchObject({ kind: 'file', size: 5 });
  });

  it('matches % and _ literally on the server (escaped), and a backslash too', async () => {
    expect(paths(await search('Docs', 'a_b'))).toEqual(['Docs/a_b.txt']);
    expect(paths(await search('Docs', '%'))).toEqual(['Docs/100%.txt']);
    expect(paths(await search('Docs', '_b'))).toEqual(['Docs/a_b.txt']);
    expect(paths(await search('Docs', 'a\\_b'))).toEqual([]);
  });

  it('accents count, only ASCII letters ignore case, and an NFD query finds the NFC name', async () => {
    expect(paths(await search('Docs', 'r\u00e9port'))).toEqual(['Docs/R\u00e9port.txt']);
    expect(paths(await search('Docs', 'R\u00c9PORT'))).toEqual([]);
    expect(paths(await search('Docs', 'ete'))).toEqual([]);
    expect(paths(await search('Docs', 're\u0301port'))).toEqual(['Docs/R\u00e9port.txt']);
  });
});

describe('refusals', () => {
  it('no grant, a sibling folder, and the root without discovery are refused', async () => {
    for (const path of ['Other', 'Docs2', '']) {
      expect(await search(path, 'report')).toMatchObject({ status: 'refused', code: 'no_grant' });
    }
  });

  it('an expired grant is refused', async () => {
    await rig.owner.writeFile('Brief/report.txt', 'x');
    await rig.broker.grant([{ path: 'Brief', mode: 'read' }]);
    expect(paths(await search('Brief', 'report'))).toEqual(['Brief/report.txt']);
    rig.broker.clock.offset = 25 * H;
    try {
      expect(await search('Brief', 'report')).toMatchObject({ status: 'refused' });
    } finally {
      rig.broker.clock.offset = 0;
    }
  });

  it('a file is not a folder, a missing folder is not found (the server answers 500 and 404)', async () => {
    expect(await search('Docs/a_b.txt', 'a')).toMatchObject({
      status: 'refused',
      code: 'not_a_folder',
    });
    expect(await search('Docs/missing', 'a')).toMatchObject({
      status: 'refused',
      code: 'not_found',
    });
  });
});

describe('discovery', () => {
  it('searches the whole account, names and paths only', async () => {
    await rig.owner.writeFile('Open/Plans/plan-b.txt', 'x');
    const answer = await search('', 'plan', 'shared');
    expect(answer).toMatchObject({ status: 'ok', discovery: true });
    expect(paths(answer)).toEqual(['Open/Plans', 'Open/Plans/plan-b.txt']);
    for (const e of answer.entries as Record<string, unknown>[])
      expect(Object.keys(e).sort()).toEqual(['kind', 'name', 'path']);
  });
});

describe('a received share mounted below the folder', () => {
  it('is searched too, its results under the path where it is mounted', async () => {
    await rig.other.writeFile('BobDocs/report-from-bob.txt', 'bob');
    const shared = await send(rig.server.url, {
      method: 'POST',
      target: '/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json',
      headers: { 'OCS-APIRequest': 'true', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        path: '/BobDocs',
        shareType: '0',
        shareWith: rig.server.owner.user,
        permissions: '1',
      }).toString(),
      auth: rig.server.other,
    });
    expect(shared.status).toBe(200);
    const moved = await rig.owner.request('MOVE', rig.owner.target('BobDocs'), {
      Destination: `${rig.server.url}${rig.owner.target('Docs/FromBob')}`,
    });
    expect(moved.status).toBe(201);
    expect(paths(await search('Docs', 'from-bob'))).toEqual(['Docs/FromBob/report-from-bob.txt']);
  });
});

describe('pages', () => {
  it('100 a page, a folder matching its own query costs no place, the cursor survives a restart', async () => {
    // "Many" itself contains "m": Nextcloud counts it in a page and then drops it.
    await rig.owner.mkdirs('Many');
    const files = Array.from({ length: 103 }, (_, i) => `Many/m${String(i).padStart(3, '0')}.txt`);
    // A few at a time: one by one the uploads alone would take half a minute.
    for (let i = 0; i < files.length; i += 8) {
      const batch = await Promise.all(files.slice(i, i + 8).map((f) => rig.owner.put(f, '')));
      for (const res of batch) expect(res.status).toBe(201);
    }
    const first = await search('Many', 'm', 'shared');
    const names = (first.entries as Found[]).map((e) => e.name);
    expect(names).toHaveLength(100);
    expect(names[0]).toBe('m000.txt');
    expect(names[99]).toBe('m099.txt');
    const again = await startBrokerOn({
      url: rig.server.url,
      user: rig.server.owner.user,
      password: rig.server.owner.password,
    });
    try {
      const second = await call(await again.agent(), 'search', {
        instance: 'shared',
        path: 'Many',
        query: 'm',
        cursor: first.next,
      });
      expect((second.entries as Found[]).map((e) => e.name)).toEqual([
        'm100.txt',
        'm101.txt',
        'm102.txt',
      ]);
      expect(second.next).toBeUndefined();
    } finally {
      await again.close();
    }
  });
});
