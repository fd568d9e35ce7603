/**
 * Attack: a remote file posing as the CLI's manifest. Older versions kept their records
 * in `.broker-manifest.json` inside the staging folder (or LOCAL's folder), where a
 * fetched file of that name lands too; a forged one then vouched for a local edit, and
 * a later fetch replaced the edit silently (exit 0). The real CLI as a subprocess
 * against the daemon and the fake Nextcloud.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');
const EDIT = 'my local edit, not pushed yet';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

describe('a fetched .broker-manifest.json posing as the manifest', () => {
  it('vouches for nothing: the later fetch exits 5 and the local edit survives', async () => {
    const stage = tempStage('forged');
    const env = clientEnv(broker.url, stage);
    const local = join(stage, 'personal', 'Documents', 'a', 'x.txt');
    // What Nextcloud holds: the file, and beside it a manifest in the old format that
    // says the local copy holding EDIT is the staged, unedited one.
    await broker.fake.writeFile('Documents/a/x.txt', 'original');
    await broker.fake.writeFile(
      'Documents/a/.broker-manifest.json',
      JSON.stringify({
        version: 1,
        files: {
          'personal:Documents/a/x.txt': {
            instance: 'personal',
            path: 'Documents/a/x.txt',
            local_path: local,
            size: Buffer.byteLength(EDIT),
            sha256: sha(EDIT),
            etag: '"forged"',
            fetched_at: '2026-01-01T00:00:00.000Z',
          },
        },
      }),
    );
    await broker.grant([{ path: 'Documents', mode: 'read' }]);

    const first = await runCli(['fetch', 'personal:Documents/a/x.txt'], env);
    expect(first.code).toBe(ExitCode.ok);
    expect(first.json.local_path).toBe(local);
    writeFileSync(local, EDIT);
    const posing = await runCli(['fetch', 'personal:Documents/a/.broker-manifest.json'], env);
    expect(posing.code).toBe(ExitCode.ok);
    expect(posing.json.local_path).toBe(join(dirname(local), '.broker-manifest.json'));
    await broker.fake.writeFile('Documents/a/x.txt', 'changed by the owner');

    // LOCAL as printed (the manifest's folder is LOCAL's folder), and the default form.
    for (const args of [
      ['fetch', 'personal:Documents/a/x.txt', local],
      ['fetch', 'personal:Documents/a/x.txt'],
    ]) {
      const again = await runCli(args, env);
      expect(again.code).toBe(ExitCode.clobber);
      expect(String(again.json.error)).toContain('edited locally');
      expect(readFileSync(local, 'utf8')).toBe(EDIT);
    }
  });

  it('an old manifest in the staging folder is not read, and the CLI says so', async () => {
    const stage = tempStage('legacy');
    const env = clientEnv(broker.url, stage);
    await broker.fake.writeFile('Legacy/y.txt', 'remote y');
    await broker.grant([{ path: 'Legacy', mode: 'read' }]);
    const local = join(stage, 'personal', 'Legacy', 'y.txt');
    await runCli(['fetch', 'personal:Legacy/y.txt'], env);
    writeFileSync(local, EDIT);
    // An old CLI's record (or anyone's forgery) of the edited bytes, at the staging root.
    writeFileSync(
      join(stage, '.broker-manifest.json'),
      JSON.stringify({
        version: 1,
        files: {
          'personal:Legacy/y.txt': {
            instance: 'personal',
            path: 'Legacy/y.txt',
            local_path: local,
            size: Buffer.byteLength(EDIT),
            sha256: sha(EDIT),
            etag: '"old"',
            fetched_at: '2026-01-01T00:00:00.000Z',
          },
        },
      }),
    );
    await broker.fake.writeFile('Legacy/y.txt', 'remote y, changed');
    const run = await runCli(['fetch', 'personal:Legacy/y.txt'], env);
    expect(run.code).toBe(ExitCode.clobber);
    expect(readFileSync(local, 'utf8')).toBe(EDIT);
    expect(String((run.json.warnings as string[] | undefined)?.[0])).toContain('never trusted');
    expect(run.stderr).toContain('not reading');
  });
});
