/**
 * The audit log fails in the middle of concurrent work: the disk fills up (ENOSPC) or
 * the file system turns read-only (EROFS). Operations whose intent line was already
 * durable may finish; from then on every operation is refused (`audit_unavailable`)
 * and nothing more reaches Nextcloud — including blob transfers whose tickets were
 * issued before the failure. Every request Nextcloud did receive has its intent line.
 *
 * (test/operations/pipeline.test.ts covers a log that is already failing when a
 * sequence of tools is called; test/audit/ covers the log's own failure modes.)
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { getBlob, putBlob } from '../../support/blobs.js';
import { callTool, type Envelope } from '../../support/mcp.js';
import { FAULT_RUN, startBroker, type Broker } from '../../support/daemon.js';
import { intentsPrecedeRequests, type ArrivedRequest, type AuditLine } from '../soak/checks.js';
import { faultyAuditFs } from '../../support/audit-fs.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

const WORKERS = 16;
const i = 'personal';
let rig: Broker | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe.each(['ENOSPC', 'EROFS'] as const)('attack: the audit disk fails mid-run (%s)', (code) => {
  it('refuses everything after the failure and sends Nextcloud nothing more', async () => {
    const disk = faultyAuditFs();
    const r = (rig = await startBroker({ ...FAULT_RUN, auditFs: disk.fs }));
    for (let n = 0; n < 8; n += 1) await r.fake.writeFile(`A/f${n}.txt`, `file ${n}`);
    await r.grant([{ path: 'A', mode: 'write' }]);
    const arrived: ArrivedRequest[] = [];
    const push = r.fake.requests.push.bind(r.fake.requests);
    r.fake.requests.push = (...items) => {
      for (const it of items)
        arrived.push({ method: it.method, path: it.path, durableSeq: r.audit.head.seq });
      return push(...items);
    };
    const transfer = await r.transfer();
    const readTicket = await callTool(transfer, 'read', { instance: i, path: 'A/f1.txt' });
    const body = Buffer.from('late upload');
    const writeTicket = await callTool(transfer, 'write', {
      instance: i,
      path: 'A/late.txt',
      size: body.length,
      if_none_match: '*',
    });
    expect([readTicket.status, writeTicket.status]).toEqual(['ok', 'ok']);

    // Concurrent work, then the disk fails under it.
    const clients: { agent: Client; transfer: Client }[] = [];
    for (let w = 0; w < WORKERS; w += 1)
      clients.push({ agent: await r.agent(), transfer: await r.transfer() });
    let stop = false;
    let failed = false;
    const during: { startedAfterFailure: boolean; env: Envelope }[] = [];
    const work = clients.map(async (c, w) => {
      for (let n = 0; !stop; n += 1) {
        const startedAfterFailure = failed;
        const op = n % 3;
        const env =
          op === 0
            ? await callTool(c.agent, 'list', { instance: i, path: 'A' })
            : op === 1
              ? await callTool(c.agent, 'mkdir', { instance: i, path: `A/d-${w}-${n}` })
              : await callTool(c.transfer, 'read', { instance: i, path: `A/f${n % 8}.txt` });
        during.push({ startedAfterFailure, env });
      }
    });
    await new Promise((res) => setTimeout(res, 300));
    disk.failEverything(code);
    failed = true;
    await new Promise((res) => setTimeout(res, 300));
    stop = true;
    await Promise.all(work);
    // In flight at the failure: ok (their intent was durable in time) or refused; never
    // an error. Started after it: refused, every one.
    for (const { env } of during) expect(['ok', 'refused']).toContain(env.status);
    expect(during.some((d) => !d.startedAfterFailure && d.env.status === 'ok')).toBe(true);
    const afterwards = during.filter((d) => d.startedAfterFailure);
    expect(afterwards.length).toBeGreaterThan(0);
    for (const { env } of afterwards)
      expect(env).toMatchObject({ status: 'refused', code: 'audit_unavailable' });

    const sent = r.fake.requests.length;
    const agent = clients[0]?.agent as Client;
    const refusedAll: [string, Envelope][] = [
      ['list', await callTool(agent, 'list', { instance: i, path: 'A' })],
      ['mkdir', await callTool(agent, 'mkdir', { instance: i, path: 'A/after' })],
      ['move', await callTool(agent, 'move', { instance: i, from: 'A/f2.txt', to: 'A/g2.txt' })],
      ['trash', await callTool(agent, 'trash', { instance: i, path: 'A/f3.txt' })],
      ['read', await callTool(transfer, 'read', { instance: i, path: 'A/f4.txt' })],
      ['checkout', await callTool(transfer, 'checkout', { instance: i, path: 'A/f5.txt' })],
      [
        'blob GET (ticket issued before)',
        JSON.parse(
          (await getBlob(r.url, String(readTicket.blob_url), TRANSFER_TOKEN)).body.toString(),
        ) as Envelope,
      ],
      [
        'blob PUT (ticket issued before)',
        (await putBlob(r.url, String(writeTicket.blob_url), TRANSFER_TOKEN, body)).json as Envelope,
      ],
    ];
    for (const [op, env] of refusedAll)
      expect(env, op).toMatchObject({ status: 'refused', code: 'audit_unavailable' });
    expect(r.fake.requests.length).toBe(sent);
    expect(await r.fake.exists('A/late.txt')).toBe(false);
    expect(await r.fake.exists('A/f2.txt')).toBe(true);

    // What did reach Nextcloud had its intent line durable first; the log still verifies.
    const records = r.auditLines() as unknown as AuditLine[];
    expect(intentsPrecedeRequests(arrived, records, r.fake.user).violations).toEqual([]);
    expect(verifyAudit(r.dir)).toMatchObject({ ok: true });
  });
});
