/**
 * A refused or failed command leaves nothing behind: no folders, no temp files, no
 * state. Folders are made only once the broker has said yes and the first byte is due.
 * The real CLI as a subprocess against the daemon and the fake Nextcloud; after each
 * kind of failure the whole staging tree (and the state folder beside it) is listed.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
  await broker.fake.writeFile('Private/deep/x.txt', 'not granted');
  await broker.fake.writeFile('ReadOnly/deep/r.txt', 'read only');
  await broker.grant([
    { path: 'Granted', mode: 'read' },
    { path: 'ReadOnly', mode: 'read' },
  ]);
});
afterAll(async () => {
  await broker.close();
});

const stageDir = (): string => tempStage('left');
const envFor = (stage: string, url = broker.url): Record<string, string> => clientEnv(url, stage);

/** Every path under `dir`, relative to it, folders included. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((p) => relative(dir, join(dir, p)))
    .sort();
}

describe('after a failure the staging tree is as it was', () => {
  it.each([
    ['refused by the wall', ['fetch', 'personal:Private/deep/x.txt'], ExitCode.refused],
    [
      'a granted path that does not exist',
      ['fetch', 'personal:Granted/deep/none.txt'],
      ExitCode.refused,
    ],
    [
      'a checkout with only a read grant',
      ['checkout', 'personal:ReadOnly/deep/r.txt'],
      ExitCode.refused,
    ],
  ])('%s: no folders, no temp files, no state', async (_what, args, code) => {
    const stage = stageDir();
    const run = await runCli(args, envFor(stage));
    expect(run.code).toBe(code);
    expect(tree(stage)).toEqual([]);
    expect(existsSync(`${stage}.state`)).toBe(false);
  });

  it('the broker unreachable: nothing, not even the staging folder', async () => {
    const parent = stageDir();
    const stage = join(parent, 'stage');
    const run = await runCli(
      ['fetch', 'personal:Granted/a.txt'],
      envFor(stage, 'http://127.0.0.1:9'),
    );
    expect(run.code).toBe(ExitCode.infrastructure);
    expect(tree(parent)).toEqual([]);
  });

  it('a refused fetch into a LOCAL whose folders do not exist creates none of them', async () => {
    const stage = stageDir();
    const dest = stageDir();
    const local = join(dest, 'a', 'b', 'x.txt');
    const run = await runCli(['fetch', 'personal:Private/deep/x.txt', local], envFor(stage));
    expect(run.code).toBe(ExitCode.refused);
    expect(tree(dest)).toEqual([]);
    expect(tree(stage)).toEqual([]);
  });

  it('a refused push writes no state; a kept local edit stays the only change', async () => {
    const stage = stageDir();
    const src = join(stage, 'mine.txt');
    writeFileSync(src, 'agent data');
    const push = await runCli(['push', 'personal:Private/mine.txt', src], envFor(stage));
    expect(push.code).toBe(ExitCode.refused);
    expect(tree(stage)).toEqual(['mine.txt']);
    expect(existsSync(`${stage}.state`)).toBe(false);
  });
});
