/**
 * An operation's `outcome` line names every request it sent by Nextcloud's own id
 * (`nc_request_ids`, docs/contracts.md §4), with the `OC-FileId` / `OC-ETag` answered
 * (`nc_files`): exactly the ids the fake showed for that operation, never another
 * operation's, also when operations run at the same time, and none when nothing reached
 * Nextcloud. A request of the broker's that Nextcloud logs can thus be told from a
 * foreign one (reconciliation reads both).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  await broker.fake.writeFile('Ids/a.txt', 'a');
  await broker.grant([{ path: 'Ids', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});

/** The outcome line of the call whose intent names `path` last. */
function outcomeFor(tool: string, path: string): Record<string, unknown> {
  const lines = broker.auditLines();
  const intent = lines.findLast((l) => l.event === 'intent' && l.tool === tool && l.path === path);
  const outcome = lines.find(
    (l) => l.event === 'outcome' && l.correlation_id === intent?.correlation_id,
  );
  if (outcome === undefined) throw new Error(`no outcome for ${tool} ${path}`);
  return outcome;
}

describe('nc_request_ids: the requests of an operation, by Nextcloud’s id', () => {
  it('lists exactly the ids the fake showed for the operation, and the file id it answered', async () => {
    const from = broker.fake.requests.length;
    const answer = await call(agent, 'mkdir', { instance: 'personal', path: 'Ids/new' });
    expect(answer.status).toBe('ok');
    const shown = broker.fake.requests
      .slice(from)
      .flatMap((r) => (r.requestId === undefined ? [] : [r.requestId]));
    const outcome = outcomeFor('mkdir', 'Ids/new');
    expect(outcome.outcome).toBe('ok');
    expect(outcome.nc_request_ids).toEqual(shown);
    const mkcol = broker.fake.requests.slice(from).find((r) => r.method === 'MKCOL');
    expect(outcome.nc_files).toEqual([
      { request_id: mkcol?.requestId, file_id: expect.stringMatching(/^\d+$/) as unknown },
    ]);
  });

  it('keeps the ids of the answered requests of a failed operation; a refused request shows none', async () => {
    const from = broker.fake.requests.length;
    // A trash reads what the instance allows (answered, with an id), then the path: 404.
    const answer = await call(agent, 'trash', { instance: 'personal', path: 'Ids/missing' });
    expect(answer.status).not.toBe('ok');
    const sent = broker.fake.requests.slice(from);
    expect(sent.map((r) => r.status)).toContain(404);
    const shown = sent.flatMap((r) => (r.requestId === undefined ? [] : [r.requestId]));
    expect(shown.length).toBeGreaterThan(0);
    const outcome = outcomeFor('trash', 'Ids/missing');
    expect(outcome.outcome).not.toBe('ok');
    expect(outcome.nc_request_ids).toEqual(shown);
    expect(sent.filter((r) => r.status === 404).every((r) => r.requestId === undefined)).toBe(true);
  });

  it('has no ids when nothing reached Nextcloud (the wall refused)', async () => {
    await call(agent, 'list', { instance: 'personal', path: 'Elsewhere' });
    const refused = broker
      .auditLines()
      .findLast((l) => l.event === 'refused' && l.path === 'Elsewhere');
    expect(refused).toBeDefined();
    expect(refused).not.toHaveProperty('nc_request_ids');
  });

  it('gives operations running at once each their own ids', async () => {
    const names = Array.from({ length: 6 }, (_, i) => `Ids/p${i}`);
    const from = broker.fake.requests.length;
    await Promise.all(names.map((path) => call(agent, 'mkdir', { instance: 'personal', path })));
    const ids = names.map((path) => outcomeFor('mkdir', path).nc_request_ids as string[]);
    const all = ids.flat();
    expect(new Set(all).size).toBe(all.length);
    const shown = new Set(broker.fake.requests.slice(from).map((r) => r.requestId));
    expect(all.every((id) => shown.has(id))).toBe(true);
    // Each mkdir's own MKCOL is among its ids, and no other's.
    for (const [i, path] of names.entries()) {
      const mkcol = broker.fake.requests
        .slice(from)
        .find((r) => r.method === 'MKCOL' && r.path.endsWith(`/${path}`));
      expect(ids[i]).toContain(mkcol?.requestId);
    }
  });
});
