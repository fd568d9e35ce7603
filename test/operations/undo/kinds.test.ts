/**
 * Undo, kind by kind, on the fake Nextcloud through the whole daemon (the owner types
 * `undo …` as on the console; the agent works through both MCP surfaces and the blob
 * endpoint). For each kind: it is taken back and nothing the agent wrote is lost; and
 * the attack that matters for it: the owner (or anyone) changed the place since, and undo
 * leaves it as it is, saying what is there (`changed_since`), never destroying.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { UndoAnswer, UndoItem } from '../../../broker/operations/undo/service.js';
import { useUndoScene } from './helpers.js';
import { nextSecond } from '../../../fakes/nextcloud.js';
import { checkin, checkout, push, replace } from '../../../support/agent-writes.js';
import { call } from '../../../support/mcp.js';
import { ownerDeletes, ownerWritesAt } from '../../../support/fake-requests.js';
import { APP_PASSWORD } from '../../../support/tokens.js';

const scene = useUndoScene();
const read = (path: string) => scene.read(path);
const undo = (words: string) => scene.undo(words);

function only(answer: UndoAnswer): UndoItem {
  if (!answer.ok || answer.items.length !== 1) throw new Error(JSON.stringify(answer));
  return answer.items[0] as UndoItem;
}

const tool = (name: string, args: Record<string, unknown>) =>
  call(scene.agent, name, { instance: 'personal', ...args });

/** The seq of the newest outcome line of `name` on `path` (or `to`). */
function seqOf(name: string, path?: string): number {
  const line = scene.broker
    .auditLines()
    .filter(
      (l) =>
        l.event === 'outcome' &&
        l.tool === name &&
        (path === undefined || l.path === path || l.to === path),
    )
    .at(-1);
  return Number(line?.seq);
}

/** The contents Nextcloud keeps of `path` as versions, through the broker's own client. */
async function versionsOf(path: string): Promise<string[]> {
  const base = `${scene.broker.fake.url}/remote.php/dav`;
  const auth = `Basic ${Buffer.from(`${scene.broker.fake.user}:${APP_PASSWORD}`).toString('base64')}`;
  const id = await fetch(`${base}/files/${scene.broker.fake.user}/${path}`, {
    method: 'PROPFIND',
    headers: { authorization: auth, depth: '0' },
    body: '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>',
  }).then(async (r) => /<oc:fileid>(\d+)</.exec(await r.text())?.[1]);
  const list = await fetch(`${base}/versions/${scene.broker.fake.user}/versions/${id}`, {
    method: 'PROPFIND',
    headers: { authorization: auth, depth: '1' },
  }).then((r) => r.text());
  const out: string[] = [];
  for (const [, name] of list.matchAll(/versions\/\d+\/(\d+)</g)) {
    const got = await fetch(`${base}/versions/${scene.broker.fake.user}/versions/${id}/${name}`, {
      headers: { authorization: auth },
    });
    if (got.status === 200) out.push(await got.text());
  }
  return out;
}

describe('a replaced file (push)', () => {
  beforeEach(async () => {
    await scene.broker.fake.writeFile('D/a.txt', 'the owner');
    await scene.broker.grant([{ path: 'D', mode: 'write' }]);
    await nextSecond();
    await replace(scene.broker.url, scene.transfer, 'D/a.txt', 'the agent');
  });

  it('comes back from the version it replaced; what the agent wrote is a version now', async () => {
    const dry = only(await undo(`undo ${seqOf('blob_put')} --dry-run`));
    expect(dry).toMatchObject({ result: 'would_undo', action: 'restore_version' });
    expect(await read('D/a.txt')).toBe('the agent');
    expect(only(await undo(`undo ${seqOf('blob_put')}`))).toMatchObject({ result: 'undone' });
    expect(await read('D/a.txt')).toBe('the owner');
    expect(await versionsOf('D/a.txt')).toContain('the agent');
  });

  it('the write ticket’s record (as audit tail shows it, tool=write) points to the upload it allowed', async () => {
    const upload = seqOf('blob_put');
    const write = scene.broker.auditLines().filter((l) => l.tool === 'write');
    // Its intent's seq or its outcome's: the same answer, and nothing is changed.
    for (const line of write) {
      const answer = await undo(`undo ${String(line.seq)}`);
      expect(answer).toMatchObject({ exit: 0 });
      expect(only(answer)).toMatchObject({
        tool: 'write',
        result: 'nothing',
        reason: `a write ticket changes nothing itself; the upload it allowed is #${upload}: broker undo ${upload}`,
      });
    }
    expect(write.map((l) => l.event)).toEqual(['intent', 'outcome']);
    expect(await read('D/a.txt')).toBe('the agent');
    // A ticket no upload used says so.
    const unused = await call(scene.transfer, 'write', {
      instance: 'personal',
      path: 'D/unused.txt',
      size: 1,
      if_none_match: '*',
    });
    expect(unused).toMatchObject({ status: 'ok' });
    expect(only(await undo(`undo ${seqOf('write', 'D/unused.txt')}`))).toMatchObject({
      result: 'nothing',
      reason: 'a write ticket changes nothing itself, and no upload on record used it',
    });
  });

  it('attack: the owner wrote it since: left, with what is there (size, file id)', async () => {
    await nextSecond();
    await scene.broker.fake.writeFile('D/a.txt', 'the owner, again');
    const item = only(await undo(`undo ${seqOf('blob_put')}`));
    expect(item).toMatchObject({
      result: 'changed_since',
      now: { path: 'D/a.txt', exists: true, kind: 'file', size: 16 },
    });
    expect(await read('D/a.txt')).toBe('the owner, again');
    // The text says what is there now too, not only --json and the audit.
    const { mtime, file_id: id } = item.now ?? {};
    const at = new Date(Number(mtime) * 1000).toISOString().replace('.000Z', 'Z');
    expect(await scene.said(`undo ${seqOf('blob_put')}`)).toContain(
      `— "D/a.txt" holds other content now (its size changed); now: 16 bytes, modified ${at}, file id ${String(id)}`,
    );
  });

  it('attack: the same size, other bytes (an overwrite in the same second keeps the ETag): left', async () => {
    await scene.broker.fake.writeFile('D/a.txt', 'THE AGENT');
    expect(only(await undo(`undo ${seqOf('blob_put')}`))).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('other content'),
    });
    expect(await read('D/a.txt')).toBe('THE AGENT');
  });

  it('attack: another file put at its place: left (another file id)', async () => {
    expect(await ownerDeletes(scene.broker.fake, APP_PASSWORD, 'D/a.txt')).toBe(204);
    await scene.broker.fake.writeFile('D/a.txt', 'the agent');
    expect(only(await undo(`undo ${seqOf('blob_put')}`))).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('another file'),
    });
  });

  it('attack: a version already saved under the current mtime: left, the agent’s content kept', async () => {
    const seq = seqOf('blob_put');
    const line = scene.broker.auditLines().find((l) => l.seq === seq);
    const mtime = (line?.['effect'] as { replaced: { mtime: number } }).replaced.mtime;
    // The owner's sync client: content saved as version X, then the agent's bytes again
    // at mtime X, set back onto that version's name.
    const write = (content: string, at: number) =>
      ownerWritesAt(scene.broker.fake, APP_PASSWORD, 'D/a.txt', content, at);
    expect(await write('the owner, second', mtime + 1000)).toBeLessThan(300);
    expect(await write('other', mtime + 2000)).toBeLessThan(300);
    expect(await write('the agent', mtime + 1000)).toBeLessThan(300);
    expect(only(await undo(`undo ${seq}`))).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('a version is already saved under the current mtime'),
    });
    expect(await read('D/a.txt')).toBe('the agent');
  });

  it('the version gone (the Versions app switched off since): left, saying so', async () => {
    scene.broker.fake.faults.versions = false;
    const item = only(await undo(`undo ${seqOf('blob_put')}`));
    expect(item).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('Versions app is off'),
    });
    expect(await read('D/a.txt')).toBe('the agent');
  });
});

describe('a checkin, and a checkout left without one', () => {
  beforeEach(async () => {
    await scene.broker.fake.writeFile('L/doc.txt', 'the owner');
    await scene.broker.grant([{ path: 'L', mode: 'write' }]);
    await nextSecond();
  });

  it('a checkin comes back from its version; its checkout’s lock is gone already', async () => {
    const token = await checkout(scene.transfer, 'L/doc.txt');
    await checkin(scene.broker.url, scene.transfer, 'L/doc.txt', token, 'checked in');
    const answer = await undo('undo --request 1');
    expect(answer.ok && answer.items.map((i) => [i.tool, i.result])).toEqual([
      ['blob_put', 'undone'],
      ['checkout', 'already'],
    ]);
    expect(await read('L/doc.txt')).toBe('the owner');
    expect(answer.ok && answer.exit).toBe(0);
  });

  it('the checkin ticket’s record points to its upload; an abandoned checkin’s does not', async () => {
    const token = await checkout(scene.transfer, 'L/doc.txt');
    await checkin(scene.broker.url, scene.transfer, 'L/doc.txt', token, 'checked in');
    const upload = seqOf('blob_put');
    expect(only(await undo(`undo ${seqOf('checkin')}`))).toMatchObject({
      result: 'nothing',
      reason: `a checkin ticket changes nothing itself; the upload it allowed is #${upload}: broker undo ${upload}`,
    });
    const again = await checkout(scene.transfer, 'L/doc.txt');
    expect(
      await call(scene.transfer, 'checkin', {
        instance: 'personal',
        path: 'L/doc.txt',
        lock_token: again,
        abandon: true,
      }),
    ).toMatchObject({ status: 'ok' });
    expect(only(await undo(`undo ${seqOf('checkin')}`))).toMatchObject({
      result: 'nothing',
      reason: expect.stringContaining('it changed nothing'),
    });
  });

  it('a checkout the agent never checked in: its lock is released', async () => {
    await checkout(scene.transfer, 'L/doc.txt');
    expect(scene.broker.fake.lockOf('L/doc.txt')).toBeDefined();
    expect(only(await undo(`undo ${seqOf('checkout')}`))).toMatchObject({
      result: 'undone',
      action: 'release_lock',
    });
    expect(scene.broker.fake.lockOf('L/doc.txt')).toBeUndefined();
  });
});

describe('a new file (push)', () => {
  beforeEach(async () => {
    await scene.broker.fake.mkdir('N');
    await scene.broker.grant([{ path: 'N', mode: 'write' }]);
    await push(scene.broker.url, scene.transfer, 'N/new.txt', 'made by the agent');
  });

  it('goes to the trash bin, under a name no later delete can take', async () => {
    const item = only(await undo(`undo ${seqOf('blob_put')}`));
    expect(item).toMatchObject({ result: 'undone', action: 'trash', trash: { state: 'trashed' } });
    expect(await scene.broker.fake.exists('N/new.txt')).toBe(false);
    expect(scene.broker.fake.trashed()).toEqual([item.trash?.renamed]);
  });

  it('attack: the owner wrote into it since: left', async () => {
    await scene.broker.fake.writeFile('N/new.txt', 'the owner took it over');
    expect(only(await undo(`undo ${seqOf('blob_put')}`))).toMatchObject({
      result: 'changed_since',
    });
    expect(await read('N/new.txt')).toBe('the owner took it over');
    expect(scene.broker.fake.trashed()).toEqual([]);
  });
});

describe('a new folder (mkdir)', () => {
  beforeEach(async () => {
    await scene.broker.fake.mkdir('F');
    await scene.broker.grant([{ path: 'F', mode: 'write' }]);
    expect(await tool('mkdir', { path: 'F/Made' })).toMatchObject({ status: 'ok' });
  });

  it('goes to the trash bin while it is empty', async () => {
    expect(only(await undo(`undo ${seqOf('mkdir')}`))).toMatchObject({ result: 'undone' });
    expect(await scene.broker.fake.exists('F/Made')).toBe(false);
  });

  it('attack: the owner put a file in it: left, counting what it holds', async () => {
    await scene.broker.fake.writeFile('F/Made/mine.txt', 'the owner');
    expect(only(await undo(`undo ${seqOf('mkdir')}`))).toMatchObject({
      result: 'changed_since',
      now: { path: 'F/Made', entries: 1 },
    });
    expect(await read('F/Made/mine.txt')).toBe('the owner');
  });
});

describe('a move', () => {
  beforeEach(async () => {
    await scene.broker.fake.writeFile('M/a.txt', 'moved');
    await scene.broker.grant([{ path: 'M', mode: 'write' }]);
    expect(await tool('move', { from: 'M/a.txt', to: 'M/b.txt' })).toMatchObject({ status: 'ok' });
  });

  it('is moved back', async () => {
    const seq = seqOf('move');
    // The text names the move as it was made (as --json and the audit do), then the undo.
    const text = await scene.said(`undo ${seq}`);
    expect(text.split('\n').slice(0, 2)).toEqual([
      `Undo of operation ${seq}: 1 of 1 operation(s) done.`,
      `#${seq} move \`M/a.txt\` → \`M/b.txt\`: undone — moved "M/b.txt" back to "M/a.txt"`,
    ]);
    expect(await read('M/a.txt')).toBe('moved');
    expect(await scene.broker.fake.exists('M/b.txt')).toBe(false);
    expect(only(await undo(`undo ${seq}`))).toMatchObject({
      result: 'already',
      from: 'M/a.txt',
      to: 'M/b.txt',
    });
    const again = await scene.said(`undo ${seq}`);
    expect(again).toContain(
      `Undo of operation ${seq}: nothing left to undo; 1 operation(s) were taken back already.`,
    );
    expect(again).toMatch(/: already undone — taken back by undo record \d+$/m);
  });

  it('attack: the owner took the old place: left, never over it', async () => {
    await scene.broker.fake.writeFile('M/a.txt', 'the owner’s new a');
    expect(only(await undo(`undo ${seqOf('move')}`))).toMatchObject({
      result: 'changed_since',
      now: { path: 'M/a.txt', exists: true },
    });
    // The text says what took it, and what the owner can do about it.
    expect(await scene.said(`undo ${seqOf('move')}`)).toMatch(
      new RegExp(
        `"M/a.txt" is taken by another item now: move that item aside, then undo again; now at \`M/a.txt\`: ${Buffer.byteLength('the owner’s new a')} bytes, modified \\S+Z, file id \\d+$`,
        'm',
      ),
    );
    expect(await read('M/a.txt')).toBe('the owner’s new a');
    expect(await read('M/b.txt')).toBe('moved');
  });

  it('attack: another item at the new place (the moved one went): left', async () => {
    expect(await ownerDeletes(scene.broker.fake, APP_PASSWORD, 'M/b.txt')).toBe(204);
    await scene.broker.fake.writeFile('M/b.txt', 'another b');
    expect(only(await undo(`undo ${seqOf('move')}`))).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('another item'),
    });
    expect(await scene.broker.fake.exists('M/a.txt')).toBe(false);
  });
});

describe('a trash', () => {
  beforeEach(async () => {
    await scene.broker.fake.writeFile('T/x.txt', 'trashed by the agent');
    await scene.broker.grant([{ path: 'T', mode: 'write' }]);
    expect(await tool('trash', { path: 'T/x.txt' })).toMatchObject({ status: 'ok' });
  });

  it('comes back from the trash bin to where it was, under its own name', async () => {
    expect(only(await undo(`undo ${seqOf('trash')}`))).toMatchObject({
      result: 'undone',
      action: 'restore_trash',
      path: 'T/x.txt',
    });
    expect(await read('T/x.txt')).toBe('trashed by the agent');
    expect(scene.broker.fake.trashed()).toEqual([]);
  });

  it('attack: the owner put another file where it was: left in the trash bin', async () => {
    await scene.broker.fake.writeFile('T/x.txt', 'the owner’s new x');
    expect(only(await undo(`undo ${seqOf('trash')}`))).toMatchObject({
      result: 'changed_since',
      now: { path: 'T/x.txt', exists: true },
    });
    expect(await read('T/x.txt')).toBe('the owner’s new x');
    expect(scene.broker.fake.trashed()).toHaveLength(1);
  });
});

describe('a new calendar event', () => {
  let object: string;
  beforeEach(async () => {
    scene.broker.fake.createCalendar('work');
    await scene.broker.grant([{ kind: 'calendar', path: 'work', mode: 'write' }]);
    const created = await tool('calendar_create_event', {
      calendar: 'work',
      title: 'made by the agent',
      start: '2027-01-05T10:00:00Z',
      end: '2027-01-05T11:00:00Z',
    });
    expect(created).toMatchObject({ status: 'ok' });
    object = String(
      scene.broker.auditLines().findLast((l) => l.tool === 'calendar_create_event')?.object,
    );
  });

  it('goes to the calendar’s trash bin', async () => {
    const item = only(await undo(`undo ${seqOf('calendar_create_event')}`));
    expect(item).toMatchObject({ result: 'undone', action: 'trash_event' });
    expect(item.calendar_trash).toEqual(expect.any(String));
    expect(scene.broker.fake.objectOf('calendar', 'work', object)).toBeUndefined();
  });

  it('attack: the owner edited it since: left', async () => {
    const data = scene.broker.fake.objectOf('calendar', 'work', object) ?? '';
    scene.broker.fake.addObject(
      'calendar',
      'work',
      object,
      data.replace('made by the agent', 'mine now'),
    );
    expect(only(await undo(`undo ${seqOf('calendar_create_event')}`))).toMatchObject({
      result: 'changed_since',
      reason: expect.stringContaining('edited since'),
    });
    expect(scene.broker.fake.objectOf('calendar', 'work', object)).toContain('mine now');
  });
});

describe('attack: an operation recorded before undo existed', () => {
  it('is listed, never guessed from its path: "cannot undo: recorded before undo existed"', async () => {
    await scene.broker.fake.writeFile('O/a.txt', 'old');
    const fields = {
      surface: 'agent',
      tool: 'mkdir',
      instance: 'personal',
      op: 'write',
      path: 'O/a.txt',
      correlation_id: 'an-older-broker',
    };
    await scene.broker.audit.append({ event: 'intent', ...fields, grants: [] });
    const outcome = await scene.broker.audit.append({ event: 'outcome', ...fields, outcome: 'ok' });
    const item = only(await undo(`undo ${outcome.seq}`));
    expect(item).toMatchObject({
      result: 'not_undoable',
      reason: expect.stringContaining('recorded before undo existed'),
    });
    expect(await read('O/a.txt')).toBe('old');
  });
});
