/**
 * The real `broker` CLI (a subprocess) through the daemon on the real Nextcloud: fetch,
 * push, checkout, checkin and audit verify, each checked on the server itself.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { StateStore } from '../../cli/client/transfer/state.js';
import { nextSecond } from '../../fakes/nextcloud.js';
import { useRealRig } from './rig.js';
import { until } from '../../support/until.js';

const rig = useRealRig();
const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

describe('fetch', () => {
  it('stages the file the server holds, verified; a second fetch transfers nothing', async () => {
    const etag = await rig.owner.writeFile('Fetch/a.txt', 'hello from a real nextcloud');
    await rig.broker.grant([{ path: 'Fetch', mode: 'read' }]);
    const stage = rig.stage();
    const run = await rig.cli(['fetch', 'personal:Fetch/a.txt'], stage);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json).toMatchObject({
      status: 'fetched',
      sha256: sha('hello from a real nextcloud'),
      size: 27,
      etag,
    });
    expect(readFileSync(join(stage, 'personal', 'Fetch', 'a.txt'), 'utf8')).toBe(
      'hello from a real nextcloud',
    );
    // The etag recorded came with the bytes (the blob GET's ETag): the server's own.
    const record = await new StateStore(`${stage}.state`).get('personal', 'Fetch/a.txt');
    expect(record?.etag).toBe(etag);
    // Again, unchanged: the conditional GET is answered 304, audited as unchanged.
    const again = await rig.cli(['fetch', 'personal:Fetch/a.txt'], stage);
    expect(again.code).toBe(ExitCode.ok);
    expect(again.json).toMatchObject({ status: 'unchanged', etag });
    // The download's outcome is written once its stream ended; the CLI may exit first.
    const lastBlobGet = () =>
      rig.broker
        .auditLines()
        .filter((l) => l.tool === 'blob_get')
        .at(-1);
    await until('the download’s outcome line', () => lastBlobGet()?.event === 'outcome');
    expect(lastBlobGet()).toMatchObject({
      event: 'outcome',
      unchanged: true,
      etag,
    });
    // Changed by the owner: fetched again, the new etag recorded.
    await nextSecond();
    const changed = await rig.owner.writeFile('Fetch/a.txt', 'changed on the real nextcloud');
    const third = await rig.cli(['fetch', 'personal:Fetch/a.txt'], stage);
    expect(third.json).toMatchObject({ status: 'fetched', etag: changed, size: 29 });
    expect(readFileSync(join(stage, 'personal', 'Fetch', 'a.txt'), 'utf8')).toBe(
      'changed on the real nextcloud',
    );
    expect((await new StateStore(`${stage}.state`).get('personal', 'Fetch/a.txt'))?.etag).toBe(
      changed,
    );
  });

  it('a missing file or a folder is refused at the blob GET (exit 3, the same words), nothing staged', async () => {
    await rig.owner.mkdirs('Fetch2/dir');
    await rig.broker.grant([{ path: 'Fetch2', mode: 'read' }]);
    const stage = rig.stage();
    const missing = await rig.cli(['fetch', 'personal:Fetch2/nope.txt'], stage);
    expect(missing.code).toBe(ExitCode.refused);
    expect(missing.json).toMatchObject({
      status: 'failed',
      code: 'not_found',
      error:
        "refused: 'Fetch2/nope.txt' does not exist on instance 'personal': check the path with list",
    });
    // The folder's GET is the 200 banner page without an ETag: never staged as the file.
    const folder = await rig.cli(['fetch', 'personal:Fetch2/dir'], stage);
    expect(folder.code).toBe(ExitCode.refused);
    expect(folder.json).toMatchObject({
      status: 'failed',
      code: 'not_a_file',
      error: 'refused: "Fetch2/dir" is a folder, not a file; only files can be transferred',
    });
    expect(readdirSync(stage)).toEqual([]);
  });
});

describe('push', () => {
  it('creates, replaces the fetched version, and never clobbers a change by the owner', async () => {
    await rig.owner.mkdirs('Push');
    await rig.broker.grant([{ path: 'Push', mode: 'write' }]);
    const stage = rig.stage();
    const src = join(stage, 'new.txt');
    writeFileSync(src, 'created by the agent');
    const created = await rig.cli(['push', 'personal:Push/new.txt', src], stage);
    expect(created.code).toBe(ExitCode.ok);
    expect(created.json).toMatchObject({ status: 'pushed', sha256: sha('created by the agent') });
    expect(await rig.owner.read('Push/new.txt')).toBe('created by the agent');

    await nextSecond();
    writeFileSync(src, 'second version');
    const replaced = await rig.cli(['push', 'personal:Push/new.txt', src], stage);
    expect(replaced.code).toBe(ExitCode.ok);
    expect(await rig.owner.read('Push/new.txt')).toBe('second version');

    // The owner edits the file (in a later second: Nextcloud keeps an etag within one).
    await nextSecond();
    await rig.owner.put('Push/new.txt', 'changed by the owner');
    writeFileSync(src, 'third version');
    const clobber = await rig.cli(['push', 'personal:Push/new.txt', src], stage);
    expect(clobber.code).toBe(ExitCode.clobber);
    expect(await rig.owner.read('Push/new.txt')).toBe('changed by the owner');
  });

  it('never creates over a file it did not fetch (exit 5)', async () => {
    await rig.owner.writeFile('Push2/exists.txt', 'owner data');
    await rig.broker.grant([{ path: 'Push2', mode: 'write' }]);
    const stage = rig.stage();
    const src = join(stage, 'exists.txt');
    writeFileSync(src, 'agent data');
    const run = await rig.cli(['push', 'personal:Push2/exists.txt', src], stage);
    expect(run.code).toBe(ExitCode.clobber);
    expect(await rig.owner.read('Push2/exists.txt')).toBe('owner data');
  });

  it('into a missing folder: refused with the next step (exit 3), nothing created', async () => {
    await rig.broker.grant([{ path: 'NoSuchFolder', mode: 'write' }]);
    const stage = rig.stage();
    const src = join(stage, 'x.txt');
    writeFileSync(src, 'x');
    const run = await rig.cli(['push', 'personal:NoSuchFolder/x.txt', src], stage);
    expect(run.code).toBe(ExitCode.refused);
    expect(String(run.json.error)).toMatch(/create it with mkdir first/);
    expect(await rig.owner.exists('NoSuchFolder')).toBe(false);
  });

  it('a read grant is not enough (exit 3)', async () => {
    await rig.owner.mkdirs('ReadOnly');
    await rig.broker.grant([{ path: 'ReadOnly', mode: 'read' }]);
    const stage = rig.stage();
    const src = join(stage, 'x.txt');
    writeFileSync(src, 'x');
    const run = await rig.cli(['push', 'personal:ReadOnly/x.txt', src], stage);
    expect(run.code).toBe(ExitCode.refused);
    expect(await rig.owner.list('ReadOnly')).toEqual([]);
  });
});

describe('checkout and checkin', () => {
  it('checkout stages the file locked; checkin uploads, verifies and unlocks', async () => {
    await rig.owner.writeFile('Co/doc.txt', 'v1');
    await rig.broker.grant([{ path: 'Co', mode: 'write' }]);
    const stage = rig.stage();
    const co = await rig.cli(['checkout', 'personal:Co/doc.txt'], stage);
    expect(co.code).toBe(ExitCode.ok);
    expect(co.json).toMatchObject({ status: 'checked_out', locked: true, sha256: sha('v1') });
    expect(await rig.owner.locked('Co/doc.txt')).toBe(true);
    const local = join(stage, 'personal', 'Co', 'doc.txt');
    expect(readFileSync(local, 'utf8')).toBe('v1');

    writeFileSync(local, 'v2 from the agent');
    const ci = await rig.cli(['checkin', 'personal:Co/doc.txt'], stage);
    expect(ci.code).toBe(ExitCode.ok);
    expect(ci.json).toMatchObject({ status: 'checked_in', sha256: sha('v2 from the agent') });
    expect(await rig.owner.read('Co/doc.txt')).toBe('v2 from the agent');
    expect(await rig.owner.locked('Co/doc.txt')).toBe(false);
  });

  it('after a checkin the staged version can be pushed again (its etag is current)', async () => {
    await rig.owner.writeFile('Co2/doc.txt', 'v1');
    await rig.broker.grant([{ path: 'Co2', mode: 'write' }]);
    const stage = rig.stage();
    expect((await rig.cli(['checkout', 'personal:Co2/doc.txt'], stage)).code).toBe(ExitCode.ok);
    const local = join(stage, 'personal', 'Co2', 'doc.txt');
    writeFileSync(local, 'v2');
    const ci = await rig.cli(['checkin', 'personal:Co2/doc.txt'], stage);
    expect(ci.code).toBe(ExitCode.ok);
    expect(ci.json.etag).toBe(await rig.owner.etag('Co2/doc.txt'));
    await nextSecond();
    writeFileSync(local, 'v3');
    const push = await rig.cli(['push', 'personal:Co2/doc.txt'], stage);
    expect(push.code).toBe(ExitCode.ok);
    expect(await rig.owner.read('Co2/doc.txt')).toBe('v3');
  });

  it('checkin of an unedited checkout unlocks without a new version', async () => {
    await rig.owner.writeFile('Co6/doc.txt', 'as it was');
    await rig.broker.grant([{ path: 'Co6', mode: 'write' }]);
    const stage = rig.stage();
    expect((await rig.cli(['checkout', 'personal:Co6/doc.txt'], stage)).code).toBe(ExitCode.ok);
    const versions = await rig.owner.versions('Co6/doc.txt');
    const run = await rig.cli(['checkin', 'personal:Co6/doc.txt'], stage);
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json).toMatchObject({ status: 'unchanged', unlocked: true });
    expect(await rig.owner.locked('Co6/doc.txt')).toBe(false);
    expect(await rig.owner.versions('Co6/doc.txt')).toBe(versions);
    // The etag recorded after the unlock is current: a later edit replaces the file.
    writeFileSync(join(stage, 'personal', 'Co6', 'doc.txt'), 'edited after');
    const push = await rig.cli(['push', 'personal:Co6/doc.txt'], stage);
    expect(push.code).toBe(ExitCode.ok);
    expect(await rig.owner.read('Co6/doc.txt')).toBe('edited after');
    expect(await rig.owner.versions('Co6/doc.txt')).toBe(versions + 1);
  });

  it('checkin --abandon unlocks, leaves the server copy, and a later push may replace it', async () => {
    await rig.owner.writeFile('Co3/doc.txt', 'keep');
    await rig.broker.grant([{ path: 'Co3', mode: 'write' }]);
    const stage = rig.stage();
    expect((await rig.cli(['checkout', 'personal:Co3/doc.txt'], stage)).code).toBe(ExitCode.ok);
    writeFileSync(join(stage, 'personal', 'Co3', 'doc.txt'), 'discard me');
    const run = await rig.cli(['checkin', 'personal:Co3/doc.txt', '--abandon'], stage);
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json.status).toBe('abandoned');
    expect(await rig.owner.locked('Co3/doc.txt')).toBe(false);
    expect(await rig.owner.read('Co3/doc.txt')).toBe('keep');
    // The manifest holds the etag after the unlock: the kept edit can still replace it.
    const push = await rig.cli(['push', 'personal:Co3/doc.txt'], stage);
    expect(push.code).toBe(ExitCode.ok);
    expect(await rig.owner.read('Co3/doc.txt')).toBe('discard me');
  });

  it('a file someone else has locked cannot be checked out (exit 2, retry later)', async () => {
    await rig.owner.writeFile('Co4/doc.txt', 'x');
    await rig.owner.tokenLock('Co4/doc.txt');
    await rig.broker.grant([{ path: 'Co4', mode: 'write' }]);
    const run = await rig.cli(['checkout', 'personal:Co4/doc.txt'], rig.stage());
    expect(run.code).toBe(ExitCode.infrastructure);
    expect(String(run.json.error)).toMatch(/is locked/);
  });
});

describe('LOCAL as an earlier command printed it', () => {
  it('checkout X prints L; checkin X L uploads, verifies and unlocks', async () => {
    await rig.owner.writeFile('Local/doc.txt', 'v1');
    await rig.broker.grant([{ path: 'Local', mode: 'write' }]);
    const stage = rig.stage();
    const co = await rig.cli(['checkout', 'personal:Local/doc.txt'], stage);
    expect(co.code).toBe(ExitCode.ok);
    // The record holds the etag Nextcloud gave the file under the lock.
    const record = await new StateStore(`${stage}.state`).get('personal', 'Local/doc.txt');
    expect(record?.etag).toBe(await rig.owner.etag('Local/doc.txt'));
    const local = String(co.json.local_path);
    writeFileSync(local, 'v2 from the agent');
    const ci = await rig.cli(['checkin', 'personal:Local/doc.txt', local], stage);
    expect(ci.code).toBe(ExitCode.ok);
    expect(ci.json).toMatchObject({ status: 'checked_in', local_path: local });
    expect(await rig.owner.read('Local/doc.txt')).toBe('v2 from the agent');
    expect(await rig.owner.locked('Local/doc.txt')).toBe(false);
  });

  it('fetch X LOCAL, then push X with that local_path; an unedited push uploads nothing', async () => {
    await rig.owner.writeFile('Local2/a.txt', 'remote v1');
    await rig.broker.grant([{ path: 'Local2', mode: 'write' }]);
    const stage = rig.stage();
    const work = join(rig.stage(), 'work', 'a-copy.txt');
    const fetched = await rig.cli(['fetch', 'personal:Local2/a.txt', work], stage);
    expect(fetched.json.local_path).toBe(work);
    const same = await rig.cli(['push', 'personal:Local2/a.txt', work], stage);
    expect(same.json).toMatchObject({ status: 'unchanged', etag: fetched.json.etag });
    expect(await rig.owner.etag('Local2/a.txt')).toBe(fetched.json.etag);
    await nextSecond();
    writeFileSync(work, 'edited');
    const pushed = await rig.cli(['push', 'personal:Local2/a.txt', work], stage);
    expect(pushed.code).toBe(ExitCode.ok);
    expect(await rig.owner.read('Local2/a.txt')).toBe('edited');
  });
});

describe('audit verify', () => {
  it('the audit log of everything above verifies (exit 0)', async () => {
    const run = await rig.cli(['audit', 'verify', '--data-dir', rig.broker.dir], rig.stage());
    expect(run.code).toBe(ExitCode.ok);
    expect(rig.broker.auditLines().length).toBeGreaterThan(20);
  });
});
