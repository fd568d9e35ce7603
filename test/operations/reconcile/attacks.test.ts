/**
 * Nothing gates the broker but Nextcloud and its own records: someone who holds the
 * broker's app password and uses it outside the broker (a leaked backup, a log of the
 * host) is seen by reconciliation (docs/contracts.md "broker reconcile"). Against the
 * fake over real sockets, the daemon in process: a direct WebDAV write, rename, delete,
 * a calendar change, and (with admin_audit) a read are each reported, with time, type
 * and path, audited, told to the owner and counted; nothing the broker did itself is,
 * also when it did many things at once and across a restart.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAdminAuditFile } from '../../../broker/operations/reconcile/command.js';
import type { ReconcileReport } from '../../../broker/operations/reconcile/report.js';
import { downloadVia, fetchedEtag, uploadVia } from '../../../support/blobs.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { call } from '../../../support/mcp.js';
import { METRICS_TOKEN } from '../../../support/tokens.js';

let broker: Broker;
let agent: Client;
let transfer: Client;

/** A request with the broker's own app password, not through the broker. */
async function direct(method: string, path: string, init: RequestInit = {}): Promise<number> {
  const { url, user, password } = broker.fake;
  const res = await fetch(`${url}/remote.php/dav/${path.replace('{user}', user)}`, {
    method,
    ...init,
    headers: {
      Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
      ...(init.headers as Record<string, string> | undefined),
    },
  });
  await res.arrayBuffer();
  return res.status;
}

const files = (p: string): string => `files/{user}/${p}`;

/** One pass now, as `broker reconcile` asks the running daemon; the report of `personal`. */
async function reconcile(): Promise<ReconcileReport> {
  const [report] = await broker.reconciler.passAll({ trigger: 'command' });
  if (report === undefined) throw new Error('no account');
  return report;
}

/** The unexplained changes of a pass, as [type, path]. */
async function unexplained(): Promise<string[][]> {
  return (await reconcile()).unexplained.map((u) => [u.type, u.path]);
}

async function upload(path: string, body: Buffer, condition: Record<string, string>) {
  const put = await uploadVia(broker.url, transfer, path, body, condition);
  expect(put, JSON.stringify(put.json)).toMatchObject({ status: 200 });
}

async function download(path: string): Promise<void> {
  expect((await downloadVia(broker.url, transfer, path)).status).toBe(200);
}

beforeAll(async () => {
  broker = await startBroker({ persist: true, metrics: true });
  agent = await broker.agent();
  transfer = await broker.transfer();
  await broker.fake.writeFile('Work/a.txt', 'a');
  await broker.fake.writeFile('Work/b.txt', 'b');
  broker.fake.createCalendar('personal');
  await broker.grant([
    { path: 'Work', mode: 'write' },
    { kind: 'calendar', path: 'personal', mode: 'write' },
  ]);
  // The first pass sets the cursor: what came before is not compared.
  expect((await reconcile()).status).toBe('started');
});
afterAll(async () => {
  await broker.close();
});

describe('the broker’s own operations', () => {
  it('are never reported, also many at once: uploads, folders, moves, trashes, an event', async () => {
    await Promise.all([
      upload('Work/new1.bin', randomBytes(300), { if_none_match: '*' }),
      upload('Work/new2.bin', randomBytes(300), { if_none_match: '*' }),
      call(agent, 'mkdir', { instance: 'personal', path: 'Work/Sub' }),
      call(agent, 'move', { instance: 'personal', from: 'Work/b.txt', to: 'Work/b2.txt' }),
      call(agent, 'calendar_create_event', {
        instance: 'personal',
        calendar: 'personal',
        title: 'Broker meeting',
        start: '2026-12-14T09:00:00Z',
        end: '2026-12-14T10:00:00Z',
      }),
      download('Work/a.txt'),
    ]);
    // The same file changed again and again: one entry in the Activity app, each one
    // row here, each the broker's.
    await upload('Work/same.txt', Buffer.from('v0'), { if_none_match: '*' });
    for (const v of ['v1', 'v2'])
      await upload('Work/same.txt', Buffer.from(v), {
        if_match: await fetchedEtag(broker.url, transfer, 'Work/same.txt'),
      });
    await call(agent, 'trash', { instance: 'personal', path: 'Work/new2.bin' });
    const report = await reconcile();
    expect(report.unexplained).toEqual([]);
    expect(report.rows).toBeGreaterThanOrEqual(9);
    expect(report.explained).toBe(report.rows);
  });
});

describe('someone with the broker’s app password, outside the broker', () => {
  it('a direct WebDAV write is reported: type and path', async () => {
    expect(await direct('PUT', files('Work/a.txt'), { body: 'rewritten' })).toBe(204);
    expect(await unexplained()).toEqual([['file_changed', 'Work/a.txt']]);
  });

  it('a direct rename is reported with its old and new path', async () => {
    const to = `${broker.fake.url}/remote.php/dav/files/${broker.fake.user}/Work/renamed.txt`;
    const told = broker.gateway.announcements.length;
    expect(await direct('MOVE', files('Work/b2.txt'), { headers: { Destination: to } })).toBe(201);
    const report = await reconcile();
    expect(report.unexplained).toMatchObject([
      { type: 'file_changed', old_path: 'Work/b2.txt', path: 'Work/renamed.txt' },
    ]);
    // Told as two paths with the broker's own arrow between them (not escaped as a name's).
    const notice = broker.gateway.announcements.slice(told).join('\n');
    expect(notice).toMatch(/ file_changed `Work\/b2\.txt` → `Work\/renamed\.txt`$/m);
  });

  it('a direct delete is reported', async () => {
    expect(await direct('DELETE', files('Work/renamed.txt'))).toBe(204);
    expect(await unexplained()).toEqual([['file_deleted', 'Work/renamed.txt']]);
  });

  it('a direct calendar change is reported', async () => {
    const ics = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//x//x//EN',
      'BEGIN:VEVENT',
      'UID:planted-1',
      'DTSTAMP:20261201T000000Z',
      'DTSTART:20261215T090000Z',
      'DTEND:20261215T100000Z',
      'SUMMARY:Planted',
      'END:VEVENT',
      'END:VCALENDAR',
      '',
    ].join('\r\n');
    const status = await direct('PUT', 'calendars/{user}/personal/planted-1.ics', {
      body: ics,
      headers: { 'Content-Type': 'text/calendar' },
    });
    expect(status).toBe(201);
    expect(await unexplained()).toEqual([['calendar_event', 'event planted-1']]);
  });

  it('a direct change in the same moments as the broker’s own, on the same file, is reported', async () => {
    // The broker's upload and a foreign write of the same file back to back: one Activity
    // entry when merged, two changes here, one of them unexplained.
    await upload('Work/twice.txt', Buffer.from('mine'), { if_none_match: '*' });
    expect(await direct('PUT', files('Work/twice.txt'), { body: 'theirs' })).toBe(204);
    expect(await unexplained()).toEqual([['file_changed', 'Work/twice.txt']]);
  });

  it('is audited, told to the owner with time, type and path, and counted', async () => {
    const told = broker.gateway.announcements.length;
    expect(await direct('DELETE', files('Work/twice.txt'))).toBe(204);
    const report = await reconcile();
    expect(report.unexplained).toHaveLength(1);
    const line = broker.auditLines().findLast((l) => l.event === 'reconcile');
    expect(line).toMatchObject({
      instances: ['personal', 'shared'],
      trigger: 'command',
      unexplained: 1,
      changes: [{ type: 'file_deleted', path: 'Work/twice.txt' }],
    });
    // Its own request to Nextcloud is recorded with it.
    expect((line?.nc_request_ids as string[]).length).toBeGreaterThan(0);
    const notice = broker.gateway.announcements.slice(told).join('\n');
    expect(notice).toMatch(/1 change the broker did not make/);
    expect(notice).toMatch(/file_deleted `Work\/twice.txt`/);
    expect(notice).toContain(report.unexplained[0]?.time.slice(0, 19).replace('T', ' '));
    const scraped = await fetch(`${broker.url}/metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(await scraped.text()).toMatch(
      /broker_reconcile_unexplained_total\{instance="personal"\} [1-9]/,
    );
  });

  it('the daemon’s own pass that finds some writes one warn line to its log: count, account, paths escaped, no secret', async () => {
    const lines = broker.logger.lines.length;
    expect(await direct('PUT', files('Work/odd%E2%80%AEtxt.exe'), { body: 'x' })).toBe(201);
    expect(await direct('PUT', files('Work/second.txt'), { body: 'y' })).toBe(201);
    const [report] = await broker.reconciler.passAll({ trigger: 'interval' });
    expect(report?.unexplained).toHaveLength(2);
    const warned = broker.logger.lines
      .slice(lines)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.level === 'warn');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({
      instances: ['personal', 'shared'],
      user: broker.fake.user,
      unexplained: 2,
      trigger: 'interval',
    });
    const text = JSON.stringify(warned[0]);
    expect(text).toContain('Work/odd\\\\u{202E}txt.exe');
    expect(text).toContain('Work/second.txt');
    expect(text).not.toContain('\u202E');
    expect(text).not.toContain(broker.fake.password);
  });

  it('a look back (--since) answers the asker and is audited, but neither tells the owner again nor counts again', async () => {
    const counted = async (): Promise<number> => {
      const scraped = await fetch(`${broker.url}/metrics`, {
        headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
      });
      const m = /broker_reconcile_unexplained_total\{instance="personal"\} (\d+)/.exec(
        await scraped.text(),
      );
      return Number(m?.[1] ?? 0);
    };
    const before = await counted();
    const told = broker.gateway.announcements.length;
    const lines = broker.auditLines().length;
    const since = Date.now() - 3_600_000;
    const [report] = await broker.reconciler.passAll({ trigger: 'command', since });
    // The asker gets every change of the hour the broker did not make, already told ones too.
    expect(report?.unexplained.map((u) => u.type)).toEqual(
      expect.arrayContaining(['file_changed', 'file_deleted', 'calendar_event']),
    );
    const line = broker
      .auditLines()
      .slice(lines)
      .find((l) => l.event === 'reconcile');
    expect(line).toMatchObject({
      trigger: 'command',
      since: new Date(since).toISOString(),
      unexplained: report?.unexplained.length,
    });
    expect(broker.gateway.announcements.length).toBe(told);
    expect(await counted()).toBe(before);
  });

  it('with admin_audit, a direct read is reported; the broker’s own reads and writes are not', async () => {
    await download('Work/a.txt');
    expect(await direct('GET', files('Work/a.txt'))).toBe(200);
    const file = join(broker.dir, 'admin-audit.log');
    writeFileSync(file, broker.fake.adminAudit());
    const found = await checkAdminAuditFile(file, broker.config, undefined);
    // Every file action of the account outside the broker, since the start: the direct
    // requests above, and this read; none of the broker's many.
    // One request can write two lines (29: `File updated` and `File written to`).
    const requests = [...new Map(found.unexplained.map((u) => [u.req_id, u.method])).values()];
    expect(requests, JSON.stringify(found.unexplained)).toEqual([
      'PUT',
      'MOVE',
      'DELETE',
      'PUT',
      'DELETE',
      'PUT',
      'PUT',
      'GET',
    ]);
    expect(found.unexplained.at(-1)?.message).toMatch(/accessed: "\/alice\/files\/Work\/a\.txt"$/);
    expect(found.actions).toBeGreaterThan(found.unexplained.length + 10);
    expect(found.pending).toEqual([]);
  });
});

describe('across a restart', () => {
  it('the cursor holds: nothing is reported twice, the broker’s work before and after is not reported', async () => {
    await upload('Work/before.txt', Buffer.from('1'), { if_none_match: '*' });
    broker = await broker.restart();
    agent = await broker.agent();
    transfer = await broker.transfer();
    await broker.grant([{ path: 'Work', mode: 'write' }]);
    await upload('Work/after.txt', Buffer.from('2'), { if_none_match: '*' });
    const report = await reconcile();
    expect(report.status).toBe('ok');
    expect(report.unexplained).toEqual([]);
    expect(report.rows).toBe(2);
    expect(await direct('DELETE', files('Work/after.txt'))).toBe(204);
    expect(await unexplained()).toEqual([['file_deleted', 'Work/after.txt']]);
  });
});

describe('a Nextcloud without the Activity app', () => {
  it('is off for reconciliation, said so, and the daemon goes on', async () => {
    broker.fake.faults.activityApp = false;
    try {
      const report = await reconcile();
      expect(report.status).toBe('off');
      expect(report.problem).toMatch(/Activity app is not enabled/);
      // The daemon's own pass writes no line for it (a server without the app would add
      // one every interval), and keeps its request id for a batch.
      const lines = broker.auditLines().length;
      const [quiet] = await broker.reconciler.passAll({ trigger: 'interval' });
      expect(quiet?.status).toBe('off');
      expect(broker.auditLines().length).toBe(lines);
      expect(await call(agent, 'list', { instance: 'personal', path: 'Work' })).toMatchObject({
        status: 'ok',
      });
    } finally {
      broker.fake.faults.activityApp = true;
    }
  });
});
