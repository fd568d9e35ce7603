/**
 * `broker serve` is killed with SIGKILL in the middle of work (agents listing, creating
 * folders and uploading through tickets) and started again on the same config and data
 * folder. Afterwards: the audit chain verifies, the approved grant is still there and
 * works, the request that was pending is discarded and announced on the console, and
 * every request Nextcloud received had its intent line on disk before it arrived.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { putBlob } from '../../support/blobs.js';
import { callTool, connectMcp, grantViaConsole } from '../../support/mcp.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { intentsPrecedeRequests, type ArrivedRequest, type AuditLine } from '../soak/checks.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { spawnBroker, writeBrokerConfig, type BrokerChild } from '../../support/processes.js';

let fake: FakeNextcloud;
let dir: string;
const children: BrokerChild[] = [];

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: APP_PASSWORD });
  dir = mkdtempSync(join(tmpdir(), 'broker-kill9-'));
});
afterAll(async () => {
  for (const c of children) await c.stop(1_000);
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const readRecords = (dataDir: string): AuditLine[] =>
  readFileSync(join(dataDir, 'audit.log'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as AuditLine];
      } catch {
        return []; // a torn last line: not a record
      }
    });

describe('crash: the broker is killed with SIGKILL mid-work and restarted', () => {
  it('keeps the chain, the grants and the intent-before-request rule; discards and announces pending requests', async () => {
    const config = writeBrokerConfig(dir, { instances: { personal: fake.url } });
    const dataDir = join(dir, 'data');
    // Each request Nextcloud receives is stamped with the records already on disk.
    const arrived: ArrivedRequest[] = [];
    const push = fake.requests.push.bind(fake.requests);
    fake.requests.push = (...items) => {
      const durableSeq = readRecords(dataDir).at(-1)?.seq ?? 0;
      for (const r of items) arrived.push({ method: r.method, path: r.path, durableSeq });
      return push(...items);
    };

    const first = await spawnBroker(config);
    children.push(first);
    const owner = await connectMcp(`${first.url}/mcp`, AGENT_TOKEN);
    const granted = await grantViaConsole(owner, first.type, 'personal', [
      { path: 'Work', mode: 'write' },
    ]);
    await fake.mkdir('Work');
    const pending = await callTool(owner, 'request_access', {
      instance: 'personal',
      reason: 'never decided',
      items: [{ path: 'Elsewhere', mode: 'read' }],
    });
    expect(pending.status).toBe('pending');

    const workers: Promise<void>[] = [];
    const clients: Client[] = [];
    let answered = 0;
    for (let w = 0; w < 6; w += 1) {
      const agent = await connectMcp(`${first.url}/mcp`, AGENT_TOKEN);
      const transfer = await connectMcp(`${first.url}/transfer`, TRANSFER_TOKEN);
      clients.push(agent, transfer);
      workers.push(
        (async () => {
          for (let n = 0; ; n += 1) {
            if (n % 3 === 0)
              await callTool(agent, 'mkdir', { instance: 'personal', path: `Work/d${w}-${n}` });
            else if (n % 3 === 1)
              await callTool(agent, 'list', { instance: 'personal', path: 'Work' });
            else {
              const body = Buffer.from(`upload ${w}-${n}`);
              const t = await callTool(transfer, 'write', {
                instance: 'personal',
                path: `Work/f${w}-${n}.txt`,
                size: body.length,
                if_none_match: '*',
              });
              if (t.status === 'ok')
                await putBlob(first.url, String(t.blob_url), TRANSFER_TOKEN, body);
            }
            answered += 1;
          }
        })().catch(() => undefined), // the broker dies under them: connection errors end the loop
      );
    }
    while (answered < 30) await new Promise((r) => setTimeout(r, 10));
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(workers);
    for (const c of clients) await c.close().catch(() => undefined);
    await owner.close().catch(() => undefined);
    // Straight after the crash, before any repair: whole records, a verifiable chain.
    expect(verifyAudit(dataDir)).toMatchObject({ ok: true });
    const beforeRestart = arrived.length;
    expect(beforeRestart).toBeGreaterThan(10);

    const second = await spawnBroker(config);
    children.push(second);
    // The announcement reaches the approval console (stdout of `broker serve`).
    await second.waitConsole(
      new RegExp(
        `Requests? [0-9, ]*\\b${String(pending.request)}\\b[0-9, ]* w(as|ere) discarded when the broker restarted`,
      ),
    );
    const agent = await connectMcp(`${second.url}/mcp`, AGENT_TOKEN);
    expect(await callTool(agent, 'check_access', { request: pending.request })).toMatchObject({
      state: 'discarded',
    });
    expect(await callTool(agent, 'check_access', { request: granted })).toMatchObject({
      status: 'ok',
    });
    expect(await callTool(agent, 'list', { instance: 'personal', path: 'Work' })).toMatchObject({
      status: 'ok',
    });
    await agent.close();
    expect(await second.stop()).toBe(0);

    const verdict = verifyAudit(dataDir);
    expect(verdict).toMatchObject({ ok: true });
    const records = readRecords(dataDir);
    const events = records.map((r) => r.event);
    expect(events.filter((e) => e === 'start')).toHaveLength(2);
    expect(records.some((r) => r.event === 'discard' && r.request === pending.request)).toBe(true);
    expect(intentsPrecedeRequests(arrived, records, fake.user).violations).toEqual([]);
  });
});
