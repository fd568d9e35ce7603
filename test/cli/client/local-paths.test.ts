/**
 * LOCAL (the DEST/SRC argument) may always be the `local_path` an earlier command
 * printed, for fetch, push, checkout and checkin; a folder still receives the remote
 * name; and a push of bytes the CLI itself recorded uploads nothing. The real CLI as a
 * subprocess against the daemon and the fake Nextcloud.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { recordName, StateStore } from '../../../cli/client/transfer/state.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

const stageDir = (): string => tempStage('local');
const envFor = (stage: string): Record<string, string> => clientEnv(broker.url, stage);
/** Uploads of `path` that reached Nextcloud: a PUT of the file, or a chunked upload's MOVE. */
const puts = (path: string): number =>
  broker.fake.requests.filter(
    (r) =>
      (r.method === 'PUT' && r.path.endsWith(path)) ||
      (r.method === 'MOVE' && String(r.headers['destination']).endsWith(path)),
  ).length;
const remote = async (path: string): Promise<string | undefined> =>
  (await broker.fake.readFile(path))?.toString();

describe('checkout X prints L; checkin X L', () => {
  it('checks in from the printed local_path (the form that failed with "not checked out from")', async () => {
    await broker.fake.writeFile('LocalCo/doc.txt', 'v1');
    await broker.grant([{ path: 'LocalCo', mode: 'write' }]);
    const stage = stageDir();
    const co = await runCli(['checkout', 'personal:LocalCo/doc.txt'], envFor(stage));
    expect(co.code).toBe(ExitCode.ok);
    const local = String(co.json.local_path);
    writeFileSync(local, 'v2 from the agent');
    const ci = await runCli(['checkin', 'personal:LocalCo/doc.txt', local], envFor(stage));
    expect(ci.code).toBe(ExitCode.ok);
    expect(ci.json).toMatchObject({ status: 'checked_in', local_path: local });
    expect(await remote('LocalCo/doc.txt')).toBe('v2 from the agent');
    expect(broker.fake.lockOf('LocalCo/doc.txt')).toBeUndefined();
  });

  it('records the etag the checkout answered (under the lock): a fetch then finds it unchanged', async () => {
    await broker.fake.writeFile('LocalCo2/doc.txt', 'v1');
    await broker.grant([{ path: 'LocalCo2', mode: 'write' }]);
    const stage = stageDir();
    const co = await runCli(['checkout', 'personal:LocalCo2/doc.txt'], envFor(stage));
    const record = await new StateStore(`${stage}.state`).get('personal', 'LocalCo2/doc.txt');
    expect(record?.etag).toBe(co.json.etag);
    expect(record?.lock_token).toBeDefined();
    const again = await runCli(['fetch', 'personal:LocalCo2/doc.txt'], envFor(stage));
    expect(again.json.status).toBe('unchanged');
    // A fetch keeps the checkout's lock token: checkin still works afterwards.
    const ci = await runCli(['checkin', 'personal:LocalCo2/doc.txt', '--abandon'], envFor(stage));
    expect(ci.json.status).toBe('abandoned');
  });
});

describe('LOCAL given first, the printed local_path reused', () => {
  it('fetch to a file outside the staging folder, then push from it (with and without LOCAL)', async () => {
    await broker.fake.writeFile('LocalF/a.txt', 'remote v1');
    await broker.grant([{ path: 'LocalF', mode: 'write' }]);
    const stage = stageDir();
    const work = join(stageDir(), 'work', 'copy-of-a.txt');
    const fetched = await runCli(['fetch', 'personal:LocalF/a.txt', work], envFor(stage));
    expect(fetched.code).toBe(ExitCode.ok);
    expect(fetched.json.local_path).toBe(work);
    writeFileSync(work, 'edited v2');
    const pushed = await runCli(['push', 'personal:LocalF/a.txt', work], envFor(stage));
    expect(pushed.code).toBe(ExitCode.ok);
    expect(await remote('LocalF/a.txt')).toBe('edited v2');
    // Without LOCAL, push takes the file from where the CLI last staged it.
    writeFileSync(work, 'edited v3');
    const again = await runCli(['push', 'personal:LocalF/a.txt'], envFor(stage));
    expect(again.code).toBe(ExitCode.ok);
    expect(again.json.local_path).toBe(work);
    expect(await remote('LocalF/a.txt')).toBe('edited v3');
  });

  it('checkout to a LOCAL file, checkin without LOCAL', async () => {
    await broker.fake.writeFile('LocalC/b.txt', 'v1');
    await broker.grant([{ path: 'LocalC', mode: 'write' }]);
    const stage = stageDir();
    const work = join(stageDir(), 'b-working.txt');
    const co = await runCli(['checkout', 'personal:LocalC/b.txt', work], envFor(stage));
    expect(co.json.local_path).toBe(work);
    writeFileSync(work, 'v2');
    const ci = await runCli(['checkin', 'personal:LocalC/b.txt'], envFor(stage));
    expect(ci.code).toBe(ExitCode.ok);
    expect(await remote('LocalC/b.txt')).toBe('v2');
  });

  it('a folder as LOCAL still receives the remote file name', async () => {
    await broker.fake.writeFile('LocalD/c.txt', 'c');
    await broker.grant([{ path: 'LocalD', mode: 'read' }]);
    const stage = stageDir();
    const dir = join(stageDir(), 'inbox');
    mkdirSync(dir);
    const fetched = await runCli(['fetch', 'personal:LocalD/c.txt', dir], envFor(stage));
    expect(fetched.json.local_path).toBe(join(dir, 'c.txt'));
    const slash = join(stageDir(), 'new-folder');
    const made = await runCli(
      ['fetch', 'personal:LocalD/c.txt', `${slash}/`, '--force'],
      envFor(stage),
    );
    expect(made.json.local_path).toBe(join(slash, 'c.txt'));
    expect(readFileSync(join(slash, 'c.txt'), 'utf8')).toBe('c');
  });

  it("a LOCAL inside the CLI's state folder is refused (exit 1), nothing written there", async () => {
    await broker.fake.writeFile('LocalE/d.txt', 'd');
    await broker.grant([{ path: 'LocalE', mode: 'read' }]);
    const stage = stageDir();
    const ok = await runCli(['fetch', 'personal:LocalE/d.txt'], envFor(stage));
    expect(ok.code).toBe(ExitCode.ok);
    const run = await runCli(['fetch', 'personal:LocalE/d.txt', `${stage}.state/`], envFor(stage));
    expect(run.code).toBe(ExitCode.usage);
    expect(String(run.json.error)).toContain('state folder');
    expect(readdirSync(`${stage}.state`)).toEqual([recordName('personal', 'LocalE/d.txt')]);
  });
});

describe('push of what was fetched', () => {
  it('answers unchanged and uploads nothing; an edit is pushed', async () => {
    await broker.fake.writeFile('Same/s.txt', 'as fetched');
    await broker.grant([{ path: 'Same', mode: 'write' }]);
    const stage = stageDir();
    const fetched = await runCli(['fetch', 'personal:Same/s.txt'], envFor(stage));
    const before = puts('/Same/s.txt');
    const same = await runCli(['push', 'personal:Same/s.txt'], envFor(stage));
    expect(same.code).toBe(ExitCode.ok);
    expect(same.json).toMatchObject({
      status: 'unchanged',
      etag: fetched.json.etag,
      sha256: fetched.json.sha256,
    });
    expect(puts('/Same/s.txt')).toBe(before);
    writeFileSync(String(fetched.json.local_path), 'edited');
    const pushed = await runCli(['push', 'personal:Same/s.txt'], envFor(stage));
    expect(pushed.json.status).toBe('pushed');
    expect(puts('/Same/s.txt')).toBe(before + 1);
    // Pushed again as it is: the record now holds the pushed bytes, so nothing goes up.
    const again = await runCli(['push', 'personal:Same/s.txt'], envFor(stage));
    expect(again.json.status).toBe('unchanged');
    expect(puts('/Same/s.txt')).toBe(before + 1);
  });
});
