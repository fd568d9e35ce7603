/**
 * The agent's `search` through a real MCP client over HTTP and the whole daemon: grants,
 * discovery, refusals, the audit lines, paging across a restart, and a server that
 * answers with results from outside the folder.
 */
import { createServer, type Server } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, startBrokerOn, H, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { APP_PASSWORD } from '../../support/tokens.js';

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  for (const path of [
    'Docs/Report 2024.txt',
    'Docs/sub/deep report.txt',
    'Docs/a_b.txt',
    'Docs/axb.txt',
    'Docs2/report.txt',
    'Open/Plans/report-plan.txt',
  ])
    await broker.fake.writeFile(path, 'four');
});
afterAll(async () => {
  await broker.close();
});
afterEach(() => {
  broker.fake.reset();
  broker.clock.offset = 0;
});

function linesOf(tool: string): Record<string, unknown>[] {
  const lines = broker.auditLines().filter((l) => l.tool === tool);
  const cid = lines[lines.length - 1]?.correlation_id;
  return lines.filter((l) => l.correlation_id === cid);
}

const searches = () => broker.fake.requests.filter((r) => r.method === 'SEARCH');

describe('search with a read grant', () => {
  it('answers the matching names below the folder with sizes, and says names were matched', async () => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    const answer = await call(agent, 'search', {
      instance: 'personal',
      path: 'Docs',
      query: 'REPORT',
    });
    expect(answer).toMatchObject({ status: 'ok', path: 'Docs', query: 'REPORT', discovery: false });
    expect(answer.message).toContain('names were matched, not file contents');
    expect(answer.matching).toMatch(/names only, never file contents/);
    expect(answer.matching).toMatch(/ASCII letters ignore case/);
    expect(answer.entries).toEqual([
      expect.objectContaining({ name: 'Report 2024.txt', path: 'Docs/Report 2024.txt', size: 4 }),
      expect.objectContaining({ name: 'deep report.txt', path: 'Docs/sub/deep report.txt' }),
    ]);
    expect(JSON.stringify(answer)).not.toContain('Docs2');
    const lines = linesOf('search');
    expect(lines.map((l) => [l.event, l.outcome])).toEqual([
      ['intent', undefined],
      ['outcome', 'ok'],
    ]);
    expect(lines[0]).toMatchObject({
      op: 'search',
      path: 'Docs',
      query: 'REPORT',
      discovery: false,
    });
    expect(lines[1]).toMatchObject({ results: 2, more: false, dropped_outside: 0 });
  });

  it('matches % and _ literally', async () => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    const answer = await call(agent, 'search', {
      instance: 'personal',
      path: 'Docs',
      query: 'a_b',
    });
    expect((answer.entries as { name: string }[]).map((e) => e.name)).toEqual(['a_b.txt']);
  });

  it('a write grant allows it too; an NFD query is matched in NFC', async () => {
    await broker.fake.writeFile('Work/R\u00e9sum\u00e9.txt', 'x');
    await broker.grant([{ path: 'Work', mode: 'write' }]);
    const answer = await call(agent, 'search', {
      instance: 'personal',
      path: 'Work',
      query: 'Re\u0301sume\u0301',
    });
    expect(answer).toMatchObject({ status: 'ok', query: 'R\u00e9sum\u00e9' });
    expect(answer.entries).toEqual([expect.objectContaining({ name: 'R\u00e9sum\u00e9.txt' })]);
  });
});

describe('refusals', () => {
  it('no grant: refused, audited, and Nextcloud never asked', async () => {
    broker.fake.requests.length = 0;
    const answer = await call(agent, 'search', { instance: 'personal', path: 'Open', query: 'x' });
    expect(answer).toMatchObject({ status: 'refused', code: 'no_grant' });
    expect(answer.hint).toMatch(/request_access/);
    expect(linesOf('search').map((l) => l.event)).toEqual(['refused']);
    expect(broker.fake.requests).toEqual([]);
  });

  it('a Docs grant does not reach the sibling Docs2 or the parent root', async () => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    for (const path of ['Docs2', '', '/']) {
      expect(
        await call(agent, 'search', { instance: 'personal', path, query: 'report' }),
      ).toMatchObject({
        status: 'refused',
        code: 'no_grant',
      });
    }
    expect(searches()).toEqual([]);
  });

  it('an expired grant searches nothing', async () => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    broker.clock.offset = 25 * H;
    expect(
      await call(agent, 'search', { instance: 'personal', path: 'Docs', query: 'report' }),
    ).toMatchObject({
      status: 'refused',
    });
    expect(searches()).toEqual([]);
  });

  it.each([
    ['blank', '   ', 'empty'],
    ['with a slash', 'sub/deep', '"/"'],
    ['with a control character', 'a\u0007', 'control character'],
    ['with a bidi override', 'txt.\u202eexe', 'invisible'],
  ])('a query %s is refused before the wall, audited, never sent', async (_what, query, reason) => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    const answer = await call(agent, 'search', { instance: 'personal', path: 'Docs', query });
    expect(answer).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    expect(answer.message).toContain(reason);
    expect(linesOf('search').map((l) => l.event)).toEqual(['refused']);
    expect(searches()).toEqual([]);
  });

  it('a file is not a folder; a missing folder is not found; each says what to do', async () => {
    await broker.grant([{ path: 'Docs', mode: 'read' }]);
    const file = await call(agent, 'search', {
      instance: 'personal',
      path: 'Docs/a_b.txt',
      query: 'a',
    });
    expect(file).toMatchObject({ status: 'refused', code: 'not_a_folder' });
    expect(file.message).toContain('search the folder that holds it');
    const missing = await call(agent, 'search', {
      instance: 'personal',
      path: 'Docs/nope',
      query: 'a',
    });
    expect(missing).toMatchObject({ status: 'refused', code: 'not_found' });
    expect(searches()).toEqual([]);
  });
});

describe('discovery', () => {
  it('searches the whole instance, names and paths only, audited as discovery', async () => {
    const answer = await call(agent, 'search', { instance: 'shared', path: '', query: 'plan' });
    expect(answer).toMatchObject({ status: 'ok', discovery: true, path: '' });
    expect(answer.entries).toEqual([
      { name: 'Plans', kind: 'folder', path: 'Open/Plans' },
      { name: 'report-plan.txt', kind: 'file', path: 'Open/Plans/report-plan.txt' },
    ]);
    expect(answer.hint).toMatch(/names only/);
    expect(linesOf('search')[0]).toMatchObject({ event: 'intent', discovery: true, grants: [] });
  });
});

describe('pages', () => {
  it('100 results a page; the cursor survives a broker restart and belongs to its query', async () => {
    for (let i = 0; i < 105; i++)
      await broker.fake.writeFile(`Many/m${String(i).padStart(3, '0')}.txt`, '');
    const first = await call(agent, 'search', { instance: 'shared', path: 'Many', query: 'm' });
    expect((first.entries as unknown[]).length).toBe(100);
    expect(first.message).toMatch(/more results: call search again with cursor set to next/);
    const next = first.next as string;
    expect(typeof next).toBe('string');

    // Another daemon on the same instance account: the cursor is signed, not remembered.
    const again = await startBrokerOn({
      url: broker.fake.url,
      user: broker.fake.user,
      password: APP_PASSWORD,
    });
    try {
      const client = await again.agent();
      const second = await call(client, 'search', {
        instance: 'shared',
        path: 'Many',
        query: 'm',
        cursor: next,
      });
      expect(second.status).toBe('ok');
      expect((second.entries as { name: string }[]).map((e) => e.name)).toEqual([
        'm100.txt',
        'm101.txt',
        'm102.txt',
        'm103.txt',
        'm104.txt',
      ]);
      expect(second.next).toBeUndefined();
      const replayed = await call(client, 'search', {
        instance: 'shared',
        path: 'Many',
        query: 'm1',
        cursor: next,
      });
      expect(replayed).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
      expect(replayed.message).toContain('another search');
    } finally {
      await again.close();
    }
  });
});

describe('a server that sends results from outside the folder', () => {
  let server: Server;
  let url: string;
  const DAV = '/remote.php/dav/files/alice';
  const multistatus = (items: string[]) =>
    '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">' +
    items
      .map(
        (i) =>
          `<d:response><d:href>${i}</d:href><d:propstat><d:prop>${
            i.endsWith('/')
              ? '<d:resourcetype><d:collection/></d:resourcetype><oc:fileid>9</oc:fileid>'
              : '<d:resourcetype/>'
          }</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`,
      )
      .join('') +
    '</d:multistatus>';

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
      res.end(
        req.method === 'PROPFIND'
          ? multistatus([`${DAV}/Docs/`])
          : multistatus([
              `${DAV}/Docs/ok.txt`,
              `${DAV}/Docs2/secret.txt`,
              `${DAV}/Private/secret.txt`,
            ]),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('drops them from the answer, records how many in the audit outcome, and logs them', async () => {
    const odd = await startBrokerOn({ url, user: 'alice', password: APP_PASSWORD });
    try {
      await odd.grant([{ path: 'Docs', mode: 'read' }]);
      const answer = await call(await odd.agent(), 'search', {
        instance: 'personal',
        path: 'Docs',
        query: 't',
      });
      expect(answer.status).toBe('ok');
      expect(answer.entries).toEqual([expect.objectContaining({ path: 'Docs/ok.txt' })]);
      expect(JSON.stringify(answer)).not.toContain('secret');
      const outcome = odd.auditLines().find((l) => l.event === 'outcome' && l.tool === 'search');
      expect(outcome).toMatchObject({ outcome: 'ok', results: 1, dropped_outside: 2 });
      expect(
        odd.logger.lines.some(
          (l) => l.includes('outside the folder') && l.includes('Docs2/secret.txt'),
        ),
      ).toBe(true);
    } finally {
      await odd.close();
    }
  });
});
