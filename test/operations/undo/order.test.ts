/**
 * Undo as a whole, on the fake Nextcloud through the whole daemon: undoing in the wrong
 * order, the owner's edit made after the agent's, two undos at once, an undo of what is
 * undone already, a log that does not verify, and an audit log that cannot record the
 * undo (nothing is sent). Each is an attack on "never destroys, never guesses".
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useUndoScene } from './helpers.js';
import { nextSecond } from '../../../fakes/nextcloud.js';
import { push, replace } from '../../../support/agent-writes.js';
import { call } from '../../../support/mcp.js';

const scene = useUndoScene();
const read = (path: string) => scene.read(path);
const undo = (words: string) => scene.undo(words);

/** The seq of each blob_put outcome on `path`, oldest first. */
const pushes = (path: string): number[] =>
  scene.broker
    .auditLines()
    .filter((l) => l.event === 'outcome' && l.tool === 'blob_put' && l.path === path)
    .map((l) => Number(l.seq));

/** Two pushes over the owner's file, each in its own second (versions are named by it). */
async function twoPushes(): Promise<number> {
  await scene.broker.fake.writeFile('W/doc.txt', 'v0 owner');
  const id = await scene.broker.grant([{ path: 'W', mode: 'write' }]);
  await nextSecond();
  await replace(scene.broker.url, scene.transfer, 'W/doc.txt', 'v1 agent');
  await nextSecond();
  await replace(scene.broker.url, scene.transfer, 'W/doc.txt', 'v2 agent!');
  return id;
}

describe('attack: undoing in the wrong order', () => {
  it('the older push is left while the newer one stands; once that is undone, it is taken back', async () => {
    await twoPushes();
    const [older, newer] = pushes('W/doc.txt');
    expect(await undo(`undo ${older}`)).toMatchObject({
      exit: 5,
      items: [{ result: 'changed_since', now: { path: 'W/doc.txt', size: 9 } }],
    });
    expect(await read('W/doc.txt')).toBe('v2 agent!');
    expect(await undo(`undo ${newer}`)).toMatchObject({ exit: 0, items: [{ result: 'undone' }] });
    expect(await read('W/doc.txt')).toBe('v1 agent');
    expect(await undo(`undo ${older}`)).toMatchObject({ exit: 0, items: [{ result: 'undone' }] });
    expect(await read('W/doc.txt')).toBe('v0 owner');
  });

  it('undo --request takes them newest first: the owner’s content comes back in one go', async () => {
    const id = await twoPushes();
    expect(await undo(`undo --request ${id}`)).toMatchObject({
      exit: 0,
      items: [{ result: 'undone' }, { result: 'undone' }],
    });
    expect(await read('W/doc.txt')).toBe('v0 owner');
  });
});

describe('attack: the owner’s edit made after the agent’s', () => {
  it('is kept; what depends on it is left too, and the rest of the request goes on', async () => {
    const id = await twoPushes();
    await push(scene.broker.url, scene.transfer, 'W/other.txt', 'the agent’s other file');
    await nextSecond();
    await scene.broker.fake.writeFile('W/doc.txt', 'the owner, after the agent');
    const answer = await undo(`undo --request ${id}`);
    expect(answer.ok && answer.items.map((i) => [i.path, i.result])).toEqual([
      ['W/other.txt', 'undone'],
      ['W/doc.txt', 'changed_since'],
      ['W/doc.txt', 'changed_since'],
    ]);
    expect(answer).toMatchObject({ exit: 5 });
    expect(await read('W/doc.txt')).toBe('the owner, after the agent');
    expect(await scene.broker.fake.exists('W/other.txt')).toBe(false);
  });
});

describe('attack: two undos at once', () => {
  it('run one after the other: the second finds it done and changes nothing', async () => {
    const id = await twoPushes();
    const [a, b] = await Promise.all([undo(`undo --request ${id}`), undo(`undo --request ${id}`)]);
    const results = [a, b].map((x) => (x.ok ? x.items.map((i) => i.result) : []));
    expect(results).toEqual([
      ['undone', 'undone'],
      ['already', 'already'],
    ]);
    expect(await read('W/doc.txt')).toBe('v0 owner');
    // The second sent nothing to Nextcloud: its lines are outcome lines only.
    const second = scene.broker
      .auditLines()
      .filter((l) => l.event === 'undo')
      .slice(-2);
    expect(second.map((l) => [l.stage, l.result])).toEqual([
      ['outcome', 'already'],
      ['outcome', 'already'],
    ]);
    // Said as what it is: nothing left, not "2 of 2 done".
    expect((await scene.said(`undo --request ${id}`)).split('\n')[0]).toBe(
      `Undo of request ${id}: nothing left to undo; 2 operation(s) were taken back already.`,
    );
  });

  it('an undo of a single seq beside one of its request: taken back once', async () => {
    const id = await twoPushes();
    const [newer] = pushes('W/doc.txt').slice(-1);
    await Promise.all([undo(`undo ${newer}`), undo(`undo --request ${id}`)]);
    expect(await read('W/doc.txt')).toBe('v0 owner');
    const undone = scene.broker
      .auditLines()
      .filter((l) => l.event === 'undo' && l.result === 'undone')
      .map((l) => l.undoes);
    expect(undone.sort()).toEqual(pushes('W/doc.txt').sort());
  });
});

describe('attack: the audit log', () => {
  it('that does not verify: undo refuses, nothing is sent', async () => {
    await twoPushes();
    const [older] = pushes('W/doc.txt');
    const before = scene.broker.fake.requests.length;
    // A line that does not continue the chain (an edit on the host).
    appendFileSync(join(scene.broker.dir, 'audit.log'), '{"seq":99999,"event":"start"}\n');
    const answer = await undo(`undo ${older}`);
    expect(answer).toMatchObject({ ok: false, code: 'audit' });
    expect(scene.broker.fake.requests.length).toBe(before);
  });

  it('that cannot record the undo: nothing is sent, and the rest is not tried', async () => {
    const id = await twoPushes();
    const before = scene.broker.fake.requests.length;
    scene.broker.failAudit(true);
    const answer = await undo(`undo --request ${id}`);
    scene.broker.failAudit(false);
    expect(answer).toMatchObject({
      exit: 2,
      items: [
        { result: 'failed', code: 'audit_unavailable' },
        { result: 'failed', code: 'audit_unavailable' },
      ],
    });
    expect(scene.broker.fake.requests.length).toBe(before);
    expect(await read('W/doc.txt')).toBe('v2 agent!');
  });
});

describe('usage', () => {
  it('a seq the log does not have, a line that is no operation, a request that does not exist', async () => {
    expect(await undo('undo 999999')).toMatchObject({ ok: false, code: 'usage' });
    expect(await undo('undo 1')).toMatchObject({
      ok: false,
      code: 'usage',
      message: expect.stringContaining('start line'),
    });
    expect(await undo('undo --request 77')).toMatchObject({ ok: false, code: 'usage' });
  });

  it('a read is nothing to undo; a request that only read lists nothing', async () => {
    await scene.broker.fake.writeFile('R/a.txt', 'x');
    const id = await scene.broker.grant([{ path: 'R', mode: 'read' }]);
    await call(scene.agent, 'list', { instance: 'personal', path: 'R' });
    const list = Number(scene.broker.auditLines().findLast((l) => l.tool === 'list')?.seq);
    expect(await undo(`undo ${list}`)).toMatchObject({ exit: 0, items: [{ result: 'nothing' }] });
    expect(await undo(`undo --request ${id}`)).toMatchObject({ exit: 0, items: [] });
  });
});
