/**
 * Undo on a real Nextcloud (issue 39; docs/nextcloud-behaviour.md "Undo on 34 and 29"):
 * an agent's whole request (a replaced file, a new file, a new folder, a move, a trash,
 * a new calendar event), then the owner's `undo --request N`. The owner's tree and
 * calendar hold what they held before the request, and every content the agent wrote
 * is still retrievable: as a version, in the trash bin, or in the calendar's trash bin.
 * Then the attacks that matter on a real server: the owner's edit after the agent's,
 * undoing in the wrong order, and a version already named by the current mtime.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { replace, push } from '../../support/agent-writes.js';
import { call } from '../../support/mcp.js';
import type { Dav } from './dav.js';
import { createCalendar, removeCollection, uniqueName } from './groupware.js';
import { useRealRig } from './rig.js';

const rig = useRealRig();
const calendar = uniqueName('undo');

/** Resolves once the server's clock is in a later second (mtimes name versions). */
const nextSecond = (): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 50));

/** Every file below `path` with its content, and every folder (`/`): the owner's view. */
async function tree(dav: Dav, path: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await dav.list(path)) {
    const child = `${path}/${name}`;
    const content = await dav.read(child);
    if (content !== undefined && !(await isFolder(dav, child))) out[child] = content;
    else {
      out[`${child}/`] = '';
      Object.assign(out, await tree(dav, child));
    }
  }
  return out;
}

async function isFolder(dav: Dav, path: string): Promise<boolean> {
  const res = await dav.request('PROPFIND', dav.target(path), { Depth: '0' });
  return res.text.includes('<d:collection/>');
}

/** The contents of every version Nextcloud keeps of `path` (the current one is 404). */
async function versionContents(dav: Dav, path: string): Promise<string[]> {
  const user = encodeURIComponent(dav.account.user);
  const id = await dav.fileId(path);
  const list = await dav.request('PROPFIND', `/remote.php/dav/versions/${user}/versions/${id}`, {
    Depth: '1',
  });
  const names = [...list.text.matchAll(/<d:href>[^<]*\/versions\/\d+\/(\d+)<\/d:href>/g)].map(
    (m) => m[1] ?? '',
  );
  const out: string[] = [];
  for (const name of names) {
    const got = await dav.request('GET', `/remote.php/dav/versions/${user}/versions/${id}/${name}`);
    if (got.status === 200) out.push(got.text);
  }
  return out;
}

/** The content of every item in the trash bin, by where it was. */
async function trashContents(dav: Dav): Promise<Record<string, string>> {
  const user = encodeURIComponent(dav.account.user);
  const out: Record<string, string> = {};
  for (const { item, original } of await dav.trash()) {
    const got = await dav.request(
      'GET',
      `/remote.php/dav/trashbin/${user}/trash/${encodeURIComponent(item)}`,
    );
    out[original] = got.status === 200 ? got.text : `(${got.status})`;
  }
  return out;
}

/** The object names of a calendar. */
async function calendarObjects(dav: Dav, name: string): Promise<string[]> {
  const user = encodeURIComponent(dav.account.user);
  const res = await dav.request('PROPFIND', `/remote.php/dav/calendars/${user}/${name}/`, {
    Depth: '1',
  });
  return [...res.text.matchAll(/<d:href>([^<]*\.ics)<\/d:href>/g)]
    .map((m) => decodeURIComponent((m[1] ?? '').split('/').pop() ?? ''))
    .sort();
}

/** The UIDs in the calendar trash bin. */
async function calendarTrashUids(dav: Dav): Promise<string[]> {
  const user = encodeURIComponent(dav.account.user);
  const res = await dav.request(
    'REPORT',
    `/remote.php/dav/calendars/${user}/trashbin/objects/`,
    { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
    '<?xml version="1.0" encoding="utf-8"?><c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><c:calendar-data/></d:prop><c:filter><c:comp-filter name="VCALENDAR"/></c:filter></c:calendar-query>',
  );
  return [...res.text.matchAll(/UID:([^\r\n]+)/g)].map((m) => m[1] ?? '');
}

let client: NextcloudClient;

beforeAll(async () => {
  await createCalendar(rig.server, rig.server.owner.user, calendar);
  const { url, owner } = rig.server;
  client = new NextcloudClient({
    name: 'personal',
    url,
    username: owner.user,
    app_password: owner.password,
  });
});
afterAll(async () => {
  client.close();
  await removeCollection(rig.server.url, rig.server.owner, 'calendars', calendar);
});

/** A PUT that sets the file's mtime (as a sync client does), answering the file id. */
async function write(path: string, content: string, mtime: number): Promise<string> {
  const res = await rig.owner.put(path, content, { 'X-OC-Mtime': String(mtime) });
  expect(res.status).toBeLessThan(300);
  return /^0*(\d+)oc/.exec(String(res.headers['oc-fileid'] ?? ''))?.[1] ?? '';
}

describe('the verbs undo adds (real server)', () => {
  it('versionSaved tells a saved version from the current content’s entry, before and after a restore', async () => {
    await rig.owner.mkdirs('VS');
    const id = await write('VS/v.txt', 'one', 1_700_000_000);
    await write('VS/v.txt', 'two', 1_700_000_100);
    expect(await client.versionSaved(id, '1700000000')).toBe(true);
    expect(await client.versionSaved(id, '1700000100')).toBe(false);
    await client.restoreVersion(id, '1700000000');
    expect(await client.versionSaved(id, '1700000000')).toBe(false);
    expect(await client.versionSaved(id, '1700000000')).toBe(false);
    expect(await client.versionSaved(id, '1700000100')).toBe(true);
  });

  it('keeps no version of an empty content', async () => {
    await rig.owner.mkdirs('VE');
    const id = await write('VE/e.txt', '', 1_700_000_000);
    await write('VE/e.txt', 'filled', 1_700_000_100);
    expect((await client.versions(id)).map((v) => v.name)).toEqual(['1700000100']);
  });

  it('eventEtag is the ETag the creation read back; null once the event is trashed', async () => {
    const created = await client.createEvent(calendar, {
      title: 'Mine',
      start: Date.UTC(2027, 0, 10, 9),
      end: Date.UTC(2027, 0, 10, 10),
    });
    expect(await client.eventEtag(calendar, created.object)).toBe(created.etag);
    await client.trashEvent(calendar, created.object);
    expect(await client.eventEtag(calendar, created.object)).toBeNull();
  });

  it('a new folder, a move and an upload answer with the item’s file id', async () => {
    const { fileId } = await client.mkdir('IDS');
    expect(fileId).toBe(await rig.owner.fileId('IDS'));
    const moved = await client.move('IDS', 'IDS2');
    expect(moved.fileId).toBe(fileId);
  });
});

describe('the whole cycle of a request, then undo --request N', () => {
  it('leaves the tree and the calendar as they were, and loses nothing the agent wrote', async () => {
    const { owner, broker, transfer, agent } = rig;
    await owner.writeFile('U/report.txt', 'the owner report');
    await owner.writeFile('U/keep.txt', 'move me');
    await owner.writeFile('U/old.txt', 'trash me');
    const before = await tree(owner, 'U');
    const eventsBefore = await calendarObjects(owner, calendar);
    const id = await broker.grant([
      { path: 'U', mode: 'write' },
      { kind: 'calendar', path: calendar, mode: 'write' },
    ]);
    // Nextcloud names a version by its content's mtime: the agent writes in a later second.
    await nextSecond();
    await replace(broker.url, transfer, 'U/report.txt', 'the agent report');
    await push(broker.url, transfer, 'U/new.txt', 'the agent new file');
    const tool = (name: string, args: Record<string, unknown>) =>
      call(agent, name, { instance: 'personal', ...args });
    expect(await tool('mkdir', { path: 'U/Made' })).toMatchObject({ status: 'ok' });
    expect(await tool('move', { from: 'U/keep.txt', to: 'U/Made/kept.txt' })).toMatchObject({
      status: 'ok',
    });
    expect(await tool('trash', { path: 'U/old.txt' })).toMatchObject({ status: 'ok' });
    const created = await tool('calendar_create_event', {
      calendar,
      title: 'the agent event',
      start: '2027-01-05T10:00:00Z',
      end: '2027-01-05T11:00:00Z',
    });
    expect(created).toMatchObject({ status: 'ok' });
    const uid = String((created['event'] as { uid: string }).uid);
    // The runbook's order: the agent can change nothing more, then undo.
    await broker.gateway.decide(`revoke ${id}`);

    const answer = await broker.gateway.decide(`undo --request ${id}`);
    const undo = answer?.undo;
    expect(undo?.ok).toBe(true);
    if (undo?.ok !== true) return;
    expect(undo.items.map((i) => [i.tool, i.result])).toEqual([
      ['calendar_create_event', 'undone'],
      ['trash', 'undone'],
      ['move', 'undone'],
      ['mkdir', 'undone'],
      ['blob_put', 'undone'],
      ['blob_put', 'undone'],
    ]);
    expect(undo.exit).toBe(0);

    expect(await tree(owner, 'U')).toEqual(before);
    expect(await calendarObjects(owner, calendar)).toEqual(eventsBefore);
    // Nothing the agent wrote is lost.
    expect(await versionContents(owner, 'U/report.txt')).toContain('the agent report');
    expect(Object.values(await trashContents(owner))).toContain('the agent new file');
    expect(await calendarTrashUids(owner)).toContain(uid);
    // Each undo is audited with Nextcloud's own request ids.
    const lines = broker.auditLines().filter((l) => l.event === 'undo' && l.stage === 'outcome');
    expect(lines).toHaveLength(6);
    for (const line of lines)
      expect((line['nc_request_ids'] as string[]).length).toBeGreaterThan(0);
  });
});

describe('attack: the owner edits the file after the agent', () => {
  it('the owner’s edit stays; undo lists the file as changed since, with what is there', async () => {
    const { owner, broker, transfer } = rig;
    await owner.writeFile('E/doc.txt', 'first');
    const id = await broker.grant([{ path: 'E', mode: 'write' }]);
    await nextSecond();
    await replace(broker.url, transfer, 'E/doc.txt', 'the agent');
    await nextSecond();
    await owner.writeFile('E/doc.txt', 'the owner again');
    const answer = await broker.gateway.decide(`undo --request ${id}`);
    expect(answer?.undo).toMatchObject({
      ok: true,
      exit: 5,
      items: [{ result: 'changed_since', now: { path: 'E/doc.txt', exists: true, size: 15 } }],
    });
    expect(await owner.read('E/doc.txt')).toBe('the owner again');
  });
});

describe('attack: undoing in the wrong order', () => {
  it('the older push is left while the newer stands; after the newer, it comes back', async () => {
    const { owner, broker, transfer } = rig;
    await owner.writeFile('W/doc.txt', 'v0');
    await broker.grant([{ path: 'W', mode: 'write' }]);
    await nextSecond();
    const first = await replace(broker.url, transfer, 'W/doc.txt', 'v1 agent');
    await nextSecond();
    const second = await replace(broker.url, transfer, 'W/doc.txt', 'v2 agent!');
    const seqOf = (sha: unknown): number =>
      Number(
        broker
          .auditLines()
          .find((l) => l.event === 'outcome' && l.path === 'W/doc.txt' && l.sha256 === sha)?.seq,
      );
    const older = await broker.gateway.decide(`undo ${seqOf(first['sha256'])}`);
    expect(older?.undo).toMatchObject({ ok: true, exit: 5, items: [{ result: 'changed_since' }] });
    expect(await owner.read('W/doc.txt')).toBe('v2 agent!');
    const newer = await broker.gateway.decide(`undo ${seqOf(second['sha256'])}`);
    expect(newer?.undo).toMatchObject({ ok: true, exit: 0, items: [{ result: 'undone' }] });
    expect(await owner.read('W/doc.txt')).toBe('v1 agent');
    const again = await broker.gateway.decide(`undo ${seqOf(first['sha256'])}`);
    expect(again?.undo).toMatchObject({ ok: true, exit: 0, items: [{ result: 'undone' }] });
    expect(await owner.read('W/doc.txt')).toBe('v0');
    // Both of the agent's contents are versions now.
    const kept = await versionContents(owner, 'W/doc.txt');
    expect(kept).toEqual(expect.arrayContaining(['v1 agent', 'v2 agent!']));
  });
});

describe('attack: a version already saved under the current mtime', () => {
  it('is refused: Nextcloud’s restore would drop the current content', async () => {
    const { owner, broker, transfer } = rig;
    await owner.writeFile('M/doc.txt', 'the owner first');
    await broker.grant([{ path: 'M', mode: 'write' }]);
    await nextSecond();
    const pushed = await replace(broker.url, transfer, 'M/doc.txt', 'the agent, in M');
    // The owner's sync client sets mtimes: content saved as version X, then the agent's
    // bytes again at mtime X (set back onto that version's name).
    const seq = Number(
      broker
        .auditLines()
        .find(
          (l) => l.event === 'outcome' && l.path === 'M/doc.txt' && l.sha256 === pushed['sha256'],
        )?.seq,
    );
    const outcome = broker.auditLines().find((l) => l.seq === seq);
    const mtime = (outcome?.['effect'] as { replaced: { mtime: number } }).replaced.mtime;
    const x = String(mtime + 1000);
    await owner.put('M/doc.txt', 'the owner second', { 'X-OC-Mtime': x });
    await owner.put('M/doc.txt', 'other', { 'X-OC-Mtime': String(mtime + 2000) });
    await owner.put('M/doc.txt', 'the agent, in M', { 'X-OC-Mtime': x });
    const answer = await broker.gateway.decide(`undo ${seq}`);
    expect(answer?.undo).toMatchObject({ ok: true, exit: 5 });
    const item = answer?.undo?.ok === true ? answer.undo.items[0] : undefined;
    expect(item).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('a version is already saved under the current mtime'),
    });
    expect(await owner.read('M/doc.txt')).toBe('the agent, in M');
  });
});
