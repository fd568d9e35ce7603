/**
 * The client's abort signal, its confirmed lock release, and trash refusing what a DELETE
 * would not trash, against the fake Nextcloud over real sockets
 * (docs/nextcloud-behaviour.md: "Releasing a lock", "Recognising a received share",
 * "Deleting in a received share").
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_TRASH_CHECK_FOLDERS } from '../../broker/nextcloud/mounts.js';
import { until } from '../../support/until.js';
import { DAV, rejectsWith, startRig, type Rig } from './helpers.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  rig.fake.reset();
  rig.sent();
});

describe('attack: the grant ends while a request is on its way (the abort signal)', () => {
  it('a slow PROPFIND is cut when the signal fires, instead of answering the listing', async () => {
    await rig.fake.writeFile('Slow/a.txt', 'a');
    rig.fake.faults.slowMs = 5_000;
    const controller = new AbortController();
    const listing = rig.client.list('Slow', undefined, 200, controller.signal);
    await until('the PROPFIND', () => rig.fake.requests.some((r) => r.method === 'PROPFIND'));
    const cut = Date.now();
    controller.abort(new Error('revoked'));
    await rejectsWith(listing, 'cancelled', false);
    expect(Date.now() - cut).toBeLessThan(2_000);
  });

  it('a request that changes something is never sent once the signal has fired', async () => {
    await rig.fake.writeFile('Gone/a.txt', 'a');
    const controller = new AbortController();
    controller.abort(new Error('revoked'));
    await rejectsWith(rig.client.mkdir('Gone/new', controller.signal), 'cancelled');
    await rejectsWith(rig.client.move('Gone/a.txt', 'Gone/b.txt', controller.signal), 'cancelled');
    await rejectsWith(rig.client.trash('Gone/a.txt', controller.signal), 'cancelled');
    await rejectsWith(rig.client.lock('Gone/a.txt', 60, controller.signal), 'cancelled');
    expect(rig.sent()).toEqual([]);
    expect(await rig.fake.exists('Gone/a.txt')).toBe(true);
  });

  it('a trash whose grant ends during its checks sends no DELETE', async () => {
    await rig.fake.writeFile('Mid/a.txt', 'a');
    rig.fake.faults.slowMs = 5_000;
    const controller = new AbortController();
    const trashing = rig.client.trash('Mid/a.txt', controller.signal);
    await until('the first check', () => rig.fake.requests.length > 0);
    controller.abort(new Error('revoked'));
    await rejectsWith(trashing, 'cancelled');
    rig.fake.faults.slowMs = 0;
    expect(rig.fake.requests.some((r) => r.method === 'DELETE')).toBe(false);
    expect(await rig.fake.exists('Mid/a.txt')).toBe(true);
  });
});

describe('a lock release is confirmed by the lock properties, not by UNLOCK', () => {
  it('UNLOCK 204, then the token holds nothing: unlocked, with the file as it is now', async () => {
    await rig.fake.writeFile('R/a.txt', 'a');
    const { token } = await rig.client.lock('R/a.txt', 60);
    const released = await rig.client.releaseLock('R/a.txt', token);
    expect(released.outcome).toBe('unlocked');
    expect(released.entry).toMatchObject({ path: 'R/a.txt', kind: 'file', size: 1 });
    expect(rig.fake.lockOf('R/a.txt')).toBeUndefined();
    expect(rig.sent().map((s) => s.split(' ')[0])).toEqual([
      'PROPFIND',
      'LOCK',
      'UNLOCK',
      'PROPFIND',
    ]);
  });

  it('UNLOCK 500 (the owner removed the lock, it expired, it was released): not held, not an error', async () => {
    await rig.fake.writeFile('R/b.txt', 'b');
    const { token } = await rig.client.lock('R/b.txt', 60);
    expect((await rig.client.releaseLock('R/b.txt', token)).outcome).toBe('unlocked');
    // Released already: UNLOCK answers 500 with an empty body, the props show no lock.
    expect((await rig.client.releaseLock('R/b.txt', token)).outcome).toBe('not_held');
  });

  it('another lock on the file is not ours: our token holds nothing', async () => {
    await rig.fake.writeFile('R/c.txt', 'c');
    const other = await rig.fake.lockAs('R/c.txt', { type: 'token' });
    const mine = 'opaquelocktoken:00000000-0000-0000-0000-000000000000';
    expect((await rig.client.releaseLock('R/c.txt', mine)).outcome).toBe('not_held');
    expect(rig.fake.lockOf('R/c.txt')?.token).toBe(other);
  });

  it('a deleted file took its lock with it', async () => {
    await rig.fake.writeFile('R/d.txt', 'd');
    const { token } = await rig.client.lock('R/d.txt', 60);
    await rig.fake.writeFile('R/keep.txt', 'k');
    rig.fake.faults.filesLock = false;
    await rig.client.trash('R/d.txt');
    rig.fake.faults.filesLock = true;
    expect(await rig.client.releaseLock('R/d.txt', token)).toEqual({
      outcome: 'not_held',
      entry: null,
    });
  });

  it('Nextcloud down: the release fails (to be tried again), it is never taken as done', async () => {
    await rig.fake.writeFile('R/e.txt', 'e');
    const { token } = await rig.client.lock('R/e.txt', 60);
    rig.fake.faults.down = true;
    await rejectsWith(rig.client.releaseLock('R/e.txt', token), 'unreachable', true);
    rig.fake.faults.down = false;
    expect(rig.fake.lockOf('R/e.txt')?.token).toBe(token);
  });

  it('inspect shows a token lock with its full token, and a user lock as the owner’s', async () => {
    await rig.fake.writeFile('R/f.txt', 'f');
    const { token } = await rig.client.lock('R/f.txt', 60);
    expect((await rig.client.inspect('R/f.txt')).lock).toEqual({ kind: 'token', token });
    await rig.client.releaseLock('R/f.txt', token);
    await rig.fake.lockAs('R/f.txt', { type: 'user' });
    expect((await rig.client.inspect('R/f.txt')).lock).toEqual({ kind: 'user' });
    // Over the owner's own user lock, a LOCK answers with a token that holds nothing.
    const phantom = await rig.client.lock('R/f.txt', 60);
    expect((await rig.client.inspect('R/f.txt')).lock).toEqual({ kind: 'user' });
    expect(phantom.token).toMatch(/^opaquelocktoken:/);
  });
});

describe('attack: trash a share you received (a DELETE would unshare it, for good)', () => {
  beforeAll(async () => {
    await rig.fake.writeFile('BobShared/inner.txt', 'from bob');
    await rig.fake.receiveShare('BobShared', { owner: 'bob' });
    await rig.fake.writeFile('Work/Deep/er/BobToo/x.txt', 'from bob');
    await rig.fake.writeFile('Work/mine.txt', 'mine');
    await rig.fake.receiveShare('Work/Deep/er/BobToo', { owner: 'bob' });
  });

  it('the root of a received share is refused before any DELETE, with the next step', async () => {
    const err = await rejectsWith(rig.client.trash('BobShared'), 'not_trashable', false);
    expect(err.message).toContain("a share you received from 'bob'");
    expect(err.message).toContain('ask the owner; this would unshare, not trash');
    expect(rig.fake.requests.some((r) => r.method === 'DELETE')).toBe(false);
    expect(await rig.fake.exists('BobShared/inner.txt')).toBe(true);
  });

  it('a folder holding a received share at any depth is refused too (the share would go with it)', async () => {
    const err = await rejectsWith(rig.client.trash('Work'), 'not_trashable');
    expect(err.message).toContain("'Work' holds 'Work/Deep/er/BobToo'");
    expect(rig.fake.requests.some((r) => r.method === 'DELETE')).toBe(false);
    // Depth 1 at each level, never infinity.
    expect(rig.fake.requests.every((r) => r.headers['depth'] !== 'infinity')).toBe(true);
  });

  it('a file inside a received share is trashed as usual (it can be restored)', async () => {
    const trashed = await rig.client.trash('BobShared/inner.txt');
    expect(trashed).toMatchObject({ state: 'trashed', original: 'BobShared/inner.txt' });
    expect(rig.fake.trashed()).toContain(trashed.renamed);
  });

  it('the mount facts are read from the item itself', async () => {
    expect((await rig.client.inspect('BobShared')).mount).toEqual({
      root: true,
      type: 'shared',
      owner: 'bob',
    });
    expect((await rig.client.inspect('Work/mine.txt')).mount).toEqual({
      root: false,
      type: '',
      owner: 'alice',
    });
  });

  it('a folder with more folders than the check reads is refused, not deleted unchecked', async () => {
    for (let i = 0; i <= MAX_TRASH_CHECK_FOLDERS; i++) await rig.fake.mkdir(`Wide/d${i}`);
    rig.sent();
    const err = await rejectsWith(rig.client.trash('Wide'), 'not_trashable');
    expect(err.message).toContain(`more than ${MAX_TRASH_CHECK_FOLDERS} folders`);
    expect(rig.sent().filter((s) => s.startsWith('DELETE'))).toEqual([]);
    expect(await rig.fake.exists('Wide/d0')).toBe(true);
  }, 120_000);

  it('a folder with no mount inside is trashed after its check', async () => {
    await rig.fake.writeFile('Plain/a/b.txt', 'b');
    rig.sent();
    const trashed = await rig.client.trash('Plain');
    const sent = rig.sent();
    // Renamed to its unique name, deleted under it, then found in the trash bin.
    expect(sent.at(-4)).toMatch(new RegExp(`^MOVE ${DAV}/Plain$`));
    expect(sent.at(-3)).toMatch(/^PROPFIND .*trashed/);
    expect(sent.at(-2)).toBe(`DELETE ${DAV}/${encodeURIComponent(trashed.renamed)}`);
    expect(sent.at(-1)).toMatch(/^PROPFIND \/remote\.php\/dav\/trashbin\//);
    expect(rig.fake.trashed()).toContain(trashed.renamed);
  });
});
