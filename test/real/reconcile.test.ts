/**
 * The recommended setup on a real Nextcloud (34, and 29 in real-oldest): the broker signs
 * in as its own account (here the second user, bob), which sees only what the owner
 * (alice) shared with it. Someone holding that account's app password outside the broker
 * is reported by reconciliation: a direct write, rename, delete and calendar change from
 * the Activity app, and (admin_audit on) a direct read from its log. Nothing the broker
 * did is, also many operations at once and across a restart. A trash by the receiving
 * account lands in both trash bins (docs/nextcloud-behaviour.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAdminAuditFile } from '../../broker/operations/reconcile/command.js';
import type { ReconcileReport } from '../../broker/operations/reconcile/report.js';
import { downloadVia, fetchedEtag, uploadVia } from '../../support/blobs.js';
import { startBrokerOn, type BrokerOn } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { Dav } from './dav.js';
import { createCalendar, ics, removeCollection, uniqueName } from './groupware.js';
import { headerOf, send } from './http.js';
import { shareWith } from './rig.js';
import { realServer } from './server.js';

const server = realServer();
/** The owner, who shares `Team` with the broker's account. */
const owner = new Dav(server.url, server.owner);
/** The broker's own account: what someone holding its app password can do directly. */
const account = server.other;
const direct = new Dav(server.url, account);
const calendar = uniqueName('rec');
let broker: BrokerOn;
let agent: Client;
let transfer: Client;
let auditLog = '';
/** When this file turned admin_audit on (whole seconds, as its lines are): earlier runs' lines are not this broker's. */
let auditSince = 0;

async function reconcile(): Promise<ReconcileReport> {
  const [report] = await broker.reconciler.passAll({ trigger: 'command' });
  if (report === undefined) throw new Error('no account');
  return report;
}

async function unexplained(): Promise<string[][]> {
  const report = await reconcile();
  expect(report.status).toBe('ok');
  // A rename names its old path apart (`old_path`): shown here as the text output shows it.
  return report.unexplained.map((u) => [
    u.type,
    u.old_path === undefined ? u.path : `${u.old_path} → ${u.path}`,
  ]);
}

async function upload(path: string, body: string, condition: Record<string, string>) {
  const put = await uploadVia(broker.url, transfer, path, Buffer.from(body), condition);
  expect(put, JSON.stringify(put.json)).toMatchObject({ status: 200 });
}

async function startBroker(): Promise<void> {
  broker = await startBrokerOn(
    { url: server.url, user: account.user, password: account.password },
    { persist: true },
  );
  agent = await broker.agent();
  transfer = await broker.transfer();
  await broker.grant([
    { path: 'Team', mode: 'write' },
    { kind: 'calendar', path: calendar, mode: 'write' },
  ]);
}

/** Where this server's admin_audit writes (its `logfile_audit`, else the data folder's). */
async function auditLogFile(): Promise<string> {
  const set = (await server.occ('config:system:get', 'logfile_audit').catch(() => '')).trim();
  if (set !== '') return set;
  return join((await server.occ('config:system:get', 'datadirectory')).trim(), 'audit.log');
}

/**
 * Waits until admin_audit writes the owner's reads: the server's PHP workers take up a
 * changed config.php only after their opcode cache looks at it again, which on a busy
 * machine can be seconds after `occ` changed it.
 */
async function adminAuditWrites(file: string): Promise<void> {
  for (let tries = 0; tries < 120; tries++) {
    const res = await owner.request('GET', owner.target('Team/plan.txt'));
    const id = headerOf(res, 'x-request-id');
    if (id !== undefined && existsSync(file) && readFileSync(file, 'utf8').includes(id)) return;
    await sleep(250);
  }
  throw new Error(`admin_audit wrote none of the owner's reads to ${file} within 30 s`);
}

beforeAll(async () => {
  await server.reset();
  await owner.writeFile('Team/plan.txt', 'v1');
  await owner.writeFile('Team/notes.txt', 'n');
  await owner.writeFile('Team/old.txt', 'o');
  await shareWith(server, 'owner', 'Team');
  await removeCollection(server.url, account, 'calendars', calendar);
  await createCalendar(server, account.user, calendar);
  await server.occ('app:enable', 'admin_audit');
  await server.occ('config:system:set', 'log.condition', 'apps', '0', '--value', 'admin_audit');
  auditLog = await auditLogFile();
  await adminAuditWrites(auditLog);
  auditSince = Math.floor(Date.now() / 1000) * 1000;
  await startBroker();
  // The first pass sets the cursor: the owner's setup before it is not compared.
  expect((await reconcile()).status).toBe('started');
});
afterAll(async () => {
  await broker?.close();
  await removeCollection(server.url, account, 'calendars', calendar);
  await server.occ('config:system:delete', 'log.condition');
  await server.occ('app:disable', 'admin_audit');
  await server.reset();
});

describe('the broker signed in as its own account (real server)', () => {
  it('works in the folder the owner shared: its paths are the account’s view', async () => {
    expect(await direct.list('')).toEqual(['Team']);
    const listed = await call(agent, 'list', { instance: 'personal', path: 'Team' });
    expect((listed.entries as { name: string }[]).map((e) => e.name).sort()).toEqual([
      'notes.txt',
      'old.txt',
      'plan.txt',
    ]);
  });

  it('its own operations are never reported, also many at once', async () => {
    const answers = await Promise.all([
      uploadVia(broker.url, transfer, 'Team/new1.txt', Buffer.from('1'), { if_none_match: '*' }),
      uploadVia(broker.url, transfer, 'Team/new2.txt', Buffer.from('2'), { if_none_match: '*' }),
      call(agent, 'mkdir', { instance: 'personal', path: 'Team/Sub' }),
      call(agent, 'calendar_create_event', {
        instance: 'personal',
        calendar,
        title: 'Broker meeting',
        start: '2026-12-14T09:00:00Z',
        end: '2026-12-14T10:00:00Z',
      }),
      downloadVia(broker.url, transfer, 'Team/plan.txt'),
    ]);
    // The kit's SQLite may refuse one of several writes at once ("database is locked",
    // a 500): whatever each answered, none of them is reported.
    expect(answers.filter((a) => a.status === 200 || a.status === 'ok').length).toBeGreaterThan(2);
    expect(
      await call(agent, 'move', {
        instance: 'personal',
        from: 'Team/notes.txt',
        to: 'Team/notes2.txt',
      }),
    ).toMatchObject({ status: 'ok' });
    await upload('Team/plan.txt', 'v2', {
      if_match: await fetchedEtag(broker.url, transfer, 'Team/plan.txt'),
    });
    const report = await reconcile();
    expect(report.unexplained).toEqual([]);
    expect(report.explained).toBe(report.rows);
    expect(report.rows).toBeGreaterThan(3);
  });

  it('a trash by the receiving account lands in both trash bins, and is not reported', async () => {
    expect(
      await call(agent, 'trash', { instance: 'personal', path: 'Team/old.txt' }),
    ).toMatchObject({ status: 'ok' });
    const originals = (items: { original: string }[]) =>
      items.map((i) => i.original.replace(/^\//, ''));
    // Trashed under its unique name (a later delete of the same name cannot overwrite it).
    expect(originals(await owner.trash())).toContainEqual(
      expect.stringMatching(/^Team\/old \(trashed [a-z2-7]{8}\)\.txt$/),
    );
    expect(originals(await direct.trash()).some((o) => o.startsWith('Team/old'))).toBe(true);
    expect(await unexplained()).toEqual([]);
  });
});

describe('someone with the broker’s app password, outside the broker (real server)', () => {
  it('a direct WebDAV write is reported', async () => {
    expect((await direct.put('Team/plan.txt', 'planted')).status).toBe(204);
    expect(await unexplained()).toEqual([['file_changed', 'Team/plan.txt']]);
  });

  it('a direct rename is reported', async () => {
    const res = await direct.request('MOVE', direct.target('Team/notes2.txt'), {
      Destination: `${server.url}${direct.target('Team/renamed.txt')}`,
    });
    expect(res.status).toBe(201);
    expect(await unexplained()).toEqual([['file_changed', 'Team/notes2.txt → Team/renamed.txt']]);
  });

  it('a direct delete is reported', async () => {
    expect((await direct.del('Team/renamed.txt')).status).toBe(204);
    expect(await unexplained()).toEqual([['file_deleted', 'Team/renamed.txt']]);
  });

  it('a direct calendar change is reported', async () => {
    const uid = uniqueName('planted');
    const res = await send(server.url, {
      method: 'PUT',
      target: `/remote.php/dav/calendars/${encodeURIComponent(account.user)}/${calendar}/${uid}.ics`,
      headers: { 'Content-Type': 'text/calendar; charset=utf-8' },
      body: ics(uid, ['DTSTART:20261215T090000Z', 'DTEND:20261215T100000Z', 'SUMMARY:Planted']),
      auth: account,
    });
    expect(res.status).toBe(201);
    expect(await unexplained()).toEqual([['calendar_event', `event ${uid}`]]);
  });

  it('with admin_audit, a direct read is reported; none of the broker’s reads and writes is', async () => {
    expect((await downloadVia(broker.url, transfer, 'Team/new1.txt')).status).toBe(200);
    expect(await direct.read('Team/new1.txt')).toBe('1');
    const found = await checkAdminAuditFile(auditLog, broker.config, auditSince);
    // Every file action of the account outside the broker since this broker began: the
    // direct requests above, and this read.
    // One request can write two lines (29: `File updated` and `File written to`).
    const requests = [...new Map(found.unexplained.map((u) => [u.req_id, u.method])).values()];
    expect(requests, JSON.stringify(found.unexplained)).toEqual(['PUT', 'MOVE', 'DELETE', 'GET']);
    expect(found.unexplained.at(-1)?.message).toMatch(/accessed: ".*new1\.txt"$/);
    expect(found.pending).toEqual([]);
    expect(readFileSync(auditLog, 'utf8')).toMatch(/"user":"bob"/);
  });
});

describe('across a restart (real server)', () => {
  it('nothing is reported twice; the broker’s work before and after is not reported', async () => {
    await upload('Team/before.txt', 'b', { if_none_match: '*' });
    broker = await broker.restart();
    agent = await broker.agent();
    transfer = await broker.transfer();
    await upload('Team/after.txt', 'a', { if_none_match: '*' });
    expect(await unexplained()).toEqual([]);
    expect((await direct.del('Team/after.txt')).status).toBe(204);
    expect(await unexplained()).toEqual([['file_deleted', 'Team/after.txt']]);
  });
});
