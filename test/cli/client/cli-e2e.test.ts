/**
 * The real `broker` CLI as a subprocess against the real daemon (in-process on port 0)
 * and the fake Nextcloud: each command's success, and each exit code from a real cause.
 */
import { createHash } from 'node:crypto';
import {
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
  mkdirSync,
  existsSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { StateStore } from '../../../cli/client/transfer/state.js';
import { nextSecond } from '../../../fakes/nextcloud.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { startCorruptingProxy } from './corrupting-proxy.js';
import { runCli } from '../../../support/processes.js';
import { TRANSFER_TOKEN, AGENT_TOKEN } from '../../../support/tokens.js';
import { until } from '../../../support/until.js';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

function envFor(stage: string, url = broker.url): Record<string, string> {
  return { BROKER_URL: url, BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN, BROKER_STAGE_DIR: stage };
}
const stageDir = (): string => mkdtempSync(join(tmpdir(), 'broker-cli-'));

describe('fetch', () => {
  it("stages a granted file, verified, and records it in the CLI's state", async () => {
    await broker.fake.writeFile('Fetch/a.txt', 'hello from nextcloud');
    await broker.grant([{ path: 'Fetch', mode: 'read' }]);
    const stage = stageDir();
    const seen = broker.fake.requests.length;
    const run = await runCli(['fetch', 'personal:Fetch/a.txt'], envFor(stage));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(ExitCode.ok);
    // One request to Nextcloud for the whole fetch: the GET, no PROPFIND.
    expect(broker.fake.requests.slice(seen).map((r) => [r.method, r.status])).toEqual([
      ['GET', 200],
    ]);
    const local = join(stage, 'personal', 'Fetch', 'a.txt');
    expect(run.json).toMatchObject({
      status: 'fetched',
      local_path: local,
      sha256: sha('hello from nextcloud'),
      size: 20,
    });
    expect(readFileSync(local, 'utf8')).toBe('hello from nextcloud');
    // The record is in the state folder beside the staging folder, not in it.
    expect(readdirSync(stage)).toEqual(['personal']);
    const record = await new StateStore(`${stage}.state`).get('personal', 'Fetch/a.txt');
    expect(record).toMatchObject({ local_path: local, sha256: sha('hello from nextcloud') });

    // The etag recorded is the one that came with the bytes (the read tool answers none).
    expect(record?.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(run.json.etag).toBe(record?.etag);

    // Fetching again while the remote is unchanged transfers nothing: one conditional
    // GET, answered 304 without a body.
    const before = broker.fake.requests.length;
    const again = await runCli(['fetch', 'personal:Fetch/a.txt'], envFor(stage));
    expect(again.code).toBe(ExitCode.ok);
    expect(again.json).toMatchObject({ status: 'unchanged', etag: record?.etag });
    expect(
      broker.fake.requests
        .slice(before)
        .map((r) => [r.method, r.headers['if-none-match'], r.status]),
    ).toEqual([['GET', record?.etag, 304]]);
    // The download's outcome is written once its stream ended, which the CLI need not
    // wait for: its answer came with the 304.
    const lastBlobGet = () =>
      broker
        .auditLines()
        .filter((l) => l.tool === 'blob_get')
        .at(-1);
    await until('the download’s outcome line', () => lastBlobGet()?.event === 'outcome');
    const outcome = lastBlobGet();
    expect(outcome).toMatchObject({ event: 'outcome', outcome: 'ok', unchanged: true });
    expect(outcome?.sha256).toBeUndefined();
  });

  it('a changed file is fetched again (200) and its new etag recorded', async () => {
    await broker.fake.writeFile('Changed/a.txt', 'version one');
    await broker.grant([{ path: 'Changed', mode: 'read' }]);
    const stage = stageDir();
    const first = await runCli(['fetch', 'personal:Changed/a.txt'], envFor(stage));
    expect(first.code).toBe(ExitCode.ok);
    await nextSecond();
    await broker.fake.writeFile('Changed/a.txt', 'version two, longer');
    const before = broker.fake.requests.length;
    const again = await runCli(['fetch', 'personal:Changed/a.txt'], envFor(stage));
    expect(again.code).toBe(ExitCode.ok);
    expect(again.json).toMatchObject({ status: 'fetched', size: 19 });
    expect(again.json.etag).not.toBe(first.json.etag);
    expect(
      broker.fake.requests
        .slice(before)
        .map((r) => [r.method, r.headers['if-none-match'], r.status]),
    ).toEqual([['GET', first.json.etag, 200]]);
    const local = join(stage, 'personal', 'Changed', 'a.txt');
    expect(readFileSync(local, 'utf8')).toBe('version two, longer');
    const record = await new StateStore(`${stage}.state`).get('personal', 'Changed/a.txt');
    expect(record).toMatchObject({ etag: again.json.etag, sha256: sha('version two, longer') });
  });

  it('attack: a record whose etag is not one quoted etag never reaches a header; the file comes whole', async () => {
    await broker.fake.writeFile('Tamper/a.txt', 'the remote file');
    await broker.grant([{ path: 'Tamper', mode: 'read' }]);
    const stage = stageDir();
    expect((await runCli(['fetch', 'personal:Tamper/a.txt'], envFor(stage))).code).toBe(
      ExitCode.ok,
    );
    const state = new StateStore(`${stage}.state`);
    const record = await state.get('personal', 'Tamper/a.txt');
    for (const etag of [`${String(record?.etag)}\r\nX-Injected: 1`, 'bare', '*']) {
      if (record === undefined) throw new Error('no record');
      await state.put({ ...record, etag });
      const before = broker.fake.requests.length;
      const again = await runCli(['fetch', 'personal:Tamper/a.txt'], envFor(stage));
      expect(again.code, etag).toBe(ExitCode.ok);
      expect(again.json, etag).toMatchObject({ status: 'fetched', etag: record.etag });
      const sent = broker.fake.requests.slice(before);
      expect(
        sent.map((r) => [r.method, r.headers['if-none-match'], r.status]),
        etag,
      ).toEqual([['GET', undefined, 200]]);
      expect(sent.some((r) => 'x-injected' in r.headers)).toBe(false);
    }
  });

  it('a folder or a missing file → exit 3 with the code and words of the refusal, nothing staged', async () => {
    await broker.fake.mkdir('Which/dir');
    await broker.grant([{ path: 'Which', mode: 'read' }]);
    const stage = stageDir();
    const before = broker.fake.requests.length;
    const folder = await runCli(['fetch', 'personal:Which/dir'], envFor(stage));
    expect(folder.code).toBe(ExitCode.refused);
    expect(folder.json).toMatchObject({
      status: 'failed',
      code: 'not_a_file',
      error: 'refused: "Which/dir" is a folder, not a file; only files can be transferred',
    });
    const missing = await runCli(['fetch', 'personal:Which/none.txt'], envFor(stage));
    expect(missing.code).toBe(ExitCode.refused);
    expect(missing.json).toMatchObject({
      status: 'failed',
      code: 'not_found',
      error:
        "refused: 'Which/none.txt' does not exist on instance 'personal': check the path with list",
    });
    expect(readdirSync(stage)).toEqual([]);
    // The folder's GET (the banner page) and the stat that words its refusal; the missing
    // file's GET alone.
    expect(broker.fake.requests.slice(before).map((r) => r.method)).toEqual([
      'GET',
      'PROPFIND',
      'GET',
    ]);
  });

  it('no grant → exit 3, nothing staged, Nextcloud never asked', async () => {
    await broker.fake.writeFile('Secret/x.txt', 'no');
    const stage = stageDir();
    const before = broker.fake.requests.length;
    const run = await runCli(['fetch', 'personal:Secret/x.txt'], envFor(stage));
    expect(run.code).toBe(ExitCode.refused);
    // The refusal arrives with isError set; the CLI reads the envelope it carries.
    expect(run.json).toMatchObject({ status: 'failed', code: 'no_grant' });
    expect(typeof run.json.next_step).toBe('string');
    expect(broker.fake.requests.length).toBe(before);
    expect(existsSync(join(stage, 'personal', 'Secret', 'x.txt'))).toBe(false);
  });

  it('after a revoke → exit 3 with grant_revoked and when (not no_grant)', async () => {
    await broker.fake.writeFile('Gone/x.txt', 'x');
    const id = await broker.grant([{ path: 'Gone', mode: 'read' }]);
    await broker.gateway.decide(`revoke ${id}`);
    const run = await runCli(['fetch', 'personal:Gone/x.txt'], envFor(stageDir()));
    expect(run.code).toBe(ExitCode.refused);
    expect(run.json).toMatchObject({ status: 'failed', code: 'grant_revoked' });
    expect(String(run.json.error)).toContain('revoked by the owner at');
  });

  it('a flipped byte on the way → exit 4 and the temp file is removed', async () => {
    await broker.fake.writeFile('Flip/f.bin', Buffer.alloc(4096, 7));
    await broker.grant([{ path: 'Flip', mode: 'read' }]);
    const proxy = await startCorruptingProxy(broker.url);
    try {
      const stage = stageDir();
      const run = await runCli(['fetch', 'personal:Flip/f.bin'], envFor(stage, proxy.url));
      expect(run.code).toBe(ExitCode.verification);
      // The temp file and the folders made for it are gone.
      expect(readdirSync(stage)).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('a local edit is not overwritten (exit 5) unless --force', async () => {
    await broker.fake.writeFile('Edit/e.txt', 'remote v1');
    await broker.grant([{ path: 'Edit', mode: 'read' }]);
    const stage = stageDir();
    expect((await runCli(['fetch', 'personal:Edit/e.txt'], envFor(stage))).code).toBe(0);
    const local = join(stage, 'personal', 'Edit', 'e.txt');
    writeFileSync(local, 'my local edit');
    const refused = await runCli(['fetch', 'personal:Edit/e.txt'], envFor(stage));
    expect(refused.code).toBe(ExitCode.clobber);
    expect(String(refused.json.next_step)).toContain('`broker push personal:Edit/e.txt`');
    expect(readFileSync(local, 'utf8')).toBe('my local edit');
    const forced = await runCli(['fetch', 'personal:Edit/e.txt', '--force'], envFor(stage));
    expect(forced.code).toBe(ExitCode.ok);
    expect(readFileSync(local, 'utf8')).toBe('remote v1');
  });

  it('symlink at the target or in a parent → refused, nothing written through it', async () => {
    await broker.fake.writeFile('Link/l.txt', 'payload');
    await broker.grant([{ path: 'Link', mode: 'read' }]);
    const outside = stageDir();
    const stage1 = stageDir();
    mkdirSync(join(stage1, 'personal'));
    symlinkSync(outside, join(stage1, 'personal', 'Link'));
    const parent = await runCli(['fetch', 'personal:Link/l.txt'], envFor(stage1));
    expect(parent.code).toBe(ExitCode.usage);
    const stage2 = stageDir();
    mkdirSync(join(stage2, 'personal', 'Link'), { recursive: true });
    symlinkSync(join(outside, 'victim'), join(stage2, 'personal', 'Link', 'l.txt'));
    const target = await runCli(['fetch', 'personal:Link/l.txt'], envFor(stage2));
    expect(target.code).toBe(ExitCode.usage);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a path with .. or an absolute double slash → exit 3 before any request', async () => {
    const stage = stageDir();
    const before = broker.fake.requests.length;
    for (const bad of ['personal:Fetch/../../etc/passwd', 'personal://etc/passwd']) {
      const run = await runCli(['fetch', bad], envFor(stage));
      expect(run.code).toBe(ExitCode.refused);
    }
    expect(broker.fake.requests.length).toBe(before);
    expect(readdirSync(stage)).toEqual([]);
  });
});

describe('push', () => {
  it('creates a new file, then replaces it only with the fetched etag', async () => {
    await broker.fake.mkdir('Push');
    await broker.grant([{ path: 'Push', mode: 'write' }]);
    const stage = stageDir();
    const src = join(stage, 'new.txt');
    writeFileSync(src, 'created by the agent');
    const created = await runCli(['push', 'personal:Push/new.txt', src], envFor(stage));
    expect(created.code).toBe(ExitCode.ok);
    expect(created.json).toMatchObject({ status: 'pushed', sha256: sha('created by the agent') });
    expect((await broker.fake.readFile('Push/new.txt'))?.toString()).toBe('created by the agent');

    writeFileSync(src, 'second version');
    const replaced = await runCli(['push', 'personal:Push/new.txt', src], envFor(stage));
    expect(replaced.code).toBe(ExitCode.ok);
    expect((await broker.fake.readFile('Push/new.txt'))?.toString()).toBe('second version');

    // Someone else changes the remote file: the next push is refused, nothing written.
    await broker.fake.writeFile('Push/new.txt', 'changed by the owner');
    writeFileSync(src, 'third version');
    const clobber = await runCli(['push', 'personal:Push/new.txt', src], envFor(stage));
    expect(clobber.code).toBe(ExitCode.clobber);
    expect((await broker.fake.readFile('Push/new.txt'))?.toString()).toBe('changed by the owner');
  });

  it('refuses to create over an existing remote file it never fetched (exit 5)', async () => {
    await broker.fake.writeFile('Push2/exists.txt', 'owner data');
    await broker.grant([{ path: 'Push2', mode: 'write' }]);
    const stage = stageDir();
    const src = join(stage, 'exists.txt');
    writeFileSync(src, 'agent data');
    const run = await runCli(['push', 'personal:Push2/exists.txt', src], envFor(stage));
    expect(run.code).toBe(ExitCode.clobber);
    expect((await broker.fake.readFile('Push2/exists.txt'))?.toString()).toBe('owner data');
  });

  it('a missing remote folder is refused with the next step (exit 3)', async () => {
    await broker.grant([{ path: 'NoSuchFolder', mode: 'write' }]);
    const stage = stageDir();
    const src = join(stage, 'x.txt');
    writeFileSync(src, 'x');
    const run = await runCli(['push', 'personal:NoSuchFolder/x.txt', src], envFor(stage));
    expect(run.code).toBe(ExitCode.refused);
    expect(String(run.json.next_step)).not.toContain('request_access');
  });

  it('a read grant is not enough to push (exit 3)', async () => {
    await broker.fake.mkdir('ReadOnly');
    await broker.grant([{ path: 'ReadOnly', mode: 'read' }]);
    const stage = stageDir();
    const src = join(stage, 'x.txt');
    writeFileSync(src, 'x');
    const run = await runCli(['push', 'personal:ReadOnly/x.txt', src], envFor(stage));
    expect(run.code).toBe(ExitCode.refused);
    expect(await broker.fake.exists('ReadOnly/x.txt')).toBe(false);
  });
});

describe('checkout and checkin', () => {
  it('checkout locks against other writers until checkin, which uploads and unlocks', async () => {
    await broker.fake.writeFile('Co/doc.txt', 'v1');
    await broker.grant([{ path: 'Co', mode: 'write' }]);
    const stage = stageDir();
    const co = await runCli(['checkout', 'personal:Co/doc.txt'], envFor(stage));
    expect(co.code).toBe(ExitCode.ok);
    expect(co.json).toMatchObject({ status: 'checked_out', locked: true });
    expect(broker.fake.lockOf('Co/doc.txt')?.type).toBe('token');

    // Another client (the owner's sync client, same account, no token) is blocked.
    const other = await fetch(
      `${broker.fake.url}/remote.php/dav/files/${broker.fake.user}/Co/doc.txt`,
      {
        method: 'PUT',
        headers: {
          authorization: `Basic ${Buffer.from(`${broker.fake.user}:${broker.fake.password}`).toString('base64')}`,
        },
        body: 'other writer',
      },
    );
    expect(other.status).toBe(423);

    const local = join(stage, 'personal', 'Co', 'doc.txt');
    writeFileSync(local, 'v2 from the agent');
    const ci = await runCli(['checkin', 'personal:Co/doc.txt'], envFor(stage));
    expect(ci.code).toBe(ExitCode.ok);
    expect(ci.json).toMatchObject({ status: 'checked_in', sha256: sha('v2 from the agent') });
    expect((await broker.fake.readFile('Co/doc.txt'))?.toString()).toBe('v2 from the agent');
    expect(broker.fake.lockOf('Co/doc.txt')).toBeUndefined();
  });

  it('checkin --abandon unlocks without uploading', async () => {
    await broker.fake.writeFile('Co2/doc.txt', 'keep');
    await broker.grant([{ path: 'Co2', mode: 'write' }]);
    const stage = stageDir();
    expect((await runCli(['checkout', 'personal:Co2/doc.txt'], envFor(stage))).code).toBe(0);
    writeFileSync(join(stage, 'personal', 'Co2', 'doc.txt'), 'discard me');
    const run = await runCli(['checkin', 'personal:Co2/doc.txt', '--abandon'], envFor(stage));
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json.status).toBe('abandoned');
    expect(broker.fake.lockOf('Co2/doc.txt')).toBeUndefined();
    expect((await broker.fake.readFile('Co2/doc.txt'))?.toString()).toBe('keep');
  });

  it('checkin of an unedited checkout only unlocks: no upload, no new version', async () => {
    await broker.fake.writeFile('Co6/doc.txt', 'as it was');
    await broker.grant([{ path: 'Co6', mode: 'write' }]);
    const stage = stageDir();
    expect((await runCli(['checkout', 'personal:Co6/doc.txt'], envFor(stage))).code).toBe(0);
    const before = broker.fake.requests.length;
    const run = await runCli(['checkin', 'personal:Co6/doc.txt'], envFor(stage));
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json).toMatchObject({
      status: 'unchanged',
      unlocked: true,
      sha256: sha('as it was'),
    });
    expect(String(run.json.warnings)).toContain('nothing was uploaded');
    const sent = broker.fake.requests.slice(before).map((r) => r.method);
    expect(sent).toContain('UNLOCK');
    expect(sent.filter((m) => m === 'PUT' || m === 'MOVE' || m === 'MKCOL')).toEqual([]);
    expect(broker.fake.lockOf('Co6/doc.txt')).toBeUndefined();
    // The record no longer holds a lock: an edit now goes up with push, under the new etag.
    writeFileSync(join(stage, 'personal', 'Co6', 'doc.txt'), 'edited after');
    const pushed = await runCli(['push', 'personal:Co6/doc.txt'], envFor(stage));
    expect(pushed.json.status).toBe('pushed');
    expect((await broker.fake.readFile('Co6/doc.txt'))?.toString()).toBe('edited after');
  });

  it('revoking the grant during a checkout unlocks the file', async () => {
    await broker.fake.writeFile('Co3/doc.txt', 'v1');
    const id = await broker.grant([{ path: 'Co3', mode: 'write' }]);
    const stage = stageDir();
    expect((await runCli(['checkout', 'personal:Co3/doc.txt'], envFor(stage))).code).toBe(0);
    expect(broker.fake.lockOf('Co3/doc.txt')).toBeDefined();
    await broker.gateway.decide(`revoke ${id}`);
    expect(broker.fake.lockOf('Co3/doc.txt')).toBeUndefined();
    const ci = await runCli(['checkin', 'personal:Co3/doc.txt'], envFor(stage));
    expect(ci.code).toBe(ExitCode.refused);
  });

  it('a second checkout of an edited checked-out file names `broker checkin`, not push', async () => {
    await broker.fake.writeFile('Co5/doc.txt', 'v1');
    await broker.grant([{ path: 'Co5', mode: 'write' }]);
    const stage = stageDir();
    expect((await runCli(['checkout', 'personal:Co5/doc.txt'], envFor(stage))).code).toBe(0);
    writeFileSync(join(stage, 'personal', 'Co5', 'doc.txt'), 'my edit under the lock');
    for (const command of ['checkout', 'fetch']) {
      const again = await runCli([command, 'personal:Co5/doc.txt'], envFor(stage));
      expect(again.code).toBe(ExitCode.clobber);
      expect(String(again.json.next_step)).toContain('`broker checkin personal:Co5/doc.txt`');
      expect(String(again.json.next_step)).not.toContain('push your change');
    }
  });

  it('Nextcloud reporting and holding other stored bytes (X-Hash-SHA1, then read back) fails the checkin (exit 4)', async () => {
    await broker.fake.writeFile('Co4/doc.txt', 'v1');
    await broker.grant([{ path: 'Co4', mode: 'write' }]);
    const stage = stageDir();
    expect((await runCli(['checkout', 'personal:Co4/doc.txt'], envFor(stage))).code).toBe(0);
    writeFileSync(join(stage, 'personal', 'Co4', 'doc.txt'), 'v2 that will not be stored intact');
    broker.fake.faults.xHash = 'wrong';
    broker.fake.faults.flipByte = true;
    try {
      const run = await runCli(['checkin', 'personal:Co4/doc.txt'], envFor(stage));
      expect(run.code).toBe(ExitCode.verification);
      expect(String(run.json.error)).toContain('`broker checkin` it again');
    } finally {
      broker.fake.faults.xHash = 'honest';
      broker.fake.faults.flipByte = false;
    }
  });
});

describe('environment and arguments', () => {
  it('missing BROKER_URL or token → exit 1 naming what to set', async () => {
    const noUrl = await runCli(['fetch', 'personal:a.txt'], {
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
    });
    expect(noUrl.code).toBe(ExitCode.usage);
    expect(String(noUrl.json.next_step)).toContain('BROKER_URL');
    const noToken = await runCli(['fetch', 'personal:a.txt'], { BROKER_URL: broker.url });
    expect(noToken.code).toBe(ExitCode.usage);
    expect(String(noToken.json.next_step)).toContain('BROKER_TRANSFER_TOKEN');
  });

  it('the agent token is not a transfer token → exit 1, and the token is never echoed', async () => {
    const run = await runCli(['fetch', 'personal:a.txt'], {
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: AGENT_TOKEN,
      BROKER_STAGE_DIR: stageDir(),
    });
    expect(run.code).toBe(ExitCode.usage);
    expect(run.stdout + run.stderr).not.toContain(AGENT_TOKEN);
  });

  it('broker down → exit 2 with retry advice', async () => {
    const run = await runCli(['fetch', 'personal:a.txt'], envFor(stageDir(), 'http://127.0.0.1:9'));
    expect(run.code).toBe(ExitCode.infrastructure);
    expect(String(run.json.next_step)).toMatch(/retry/);
  });

  it('bad arguments → exit 1; --help answers with an example', async () => {
    expect((await runCli(['fetch'], {})).code).toBe(ExitCode.usage);
    expect((await runCli(['fetch', 'personal:a', 'b', 'c'], {})).code).toBe(ExitCode.usage);
    expect((await runCli(['push', 'personal:a', '--bogus'], {})).code).toBe(ExitCode.usage);
    const help = await runCli(['checkout', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Example:');
  });
});
