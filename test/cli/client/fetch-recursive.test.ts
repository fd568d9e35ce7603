/**
 * `broker fetch --recursive INSTANCE:FOLDER` (cli/client/transfer/fetch-folder.ts): the files below
 * a folder, found with the transfer surface's `list`, each fetched as if alone (its own
 * read call, wall decision and audit records) into a local tree that mirrors the folder;
 * a tree it cannot mirror is refused before any file is fetched.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { clientEnv, runCli, tempStage } from '../../../support/processes.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
  await broker.fake.writeFile('Tree/top.txt', 'top');
  await broker.fake.writeFile('Tree/sub/a.txt', 'a');
  await broker.fake.writeFile('Tree/sub/deeper/b.txt', 'b');
  await broker.fake.mkdir('Tree/empty');
  await broker.grant([{ path: 'Tree', mode: 'read' }]);
});
afterAll(async () => {
  await broker.close();
});

const TREE = ['Tree/sub/a.txt', 'Tree/sub/deeper/b.txt', 'Tree/top.txt'];

describe('broker fetch --recursive INSTANCE:FOLDER', () => {
  it('fetches every file below the folder into a mirror of it, each its own ticket and record', async () => {
    const stage = tempStage('recursive');
    const before = broker.auditLines().length;
    const run = await runCli(
      ['fetch', '--recursive', 'personal:Tree'],
      clientEnv(broker.url, stage),
    );
    expect(run.code).toBe(ExitCode.ok);
    expect(run.json).toMatchObject({ status: 'ok', folder: 'personal:Tree' });
    const files = run.json.files as { target: string; status: string; local_path: string }[];
    expect(files.map((f) => f.target).sort()).toEqual(TREE.map((p) => `personal:${p}`));
    for (const file of files) {
      expect(file.status).toBe('fetched');
      expect(file.local_path).toBe(join(stage, 'personal', file.target.slice('personal:'.length)));
    }
    expect(readFileSync(join(stage, 'personal/Tree/sub/deeper/b.txt'), 'utf8')).toBe('b');
    // Only files are fetched: an empty folder is not created.
    expect(existsSync(join(stage, 'personal/Tree/empty'))).toBe(false);
    const audited = broker.auditLines().slice(before);
    const outcomes = (tool: string) =>
      audited.filter((l) => l.tool === tool && l.event === 'outcome').map((l) => l.path);
    expect(outcomes('read').sort()).toEqual(TREE);
    expect(outcomes('blob_get').sort()).toEqual(TREE);
    // One listing per folder: Tree, Tree/empty, Tree/sub, Tree/sub/deeper.
    expect(outcomes('list').sort()).toEqual(['Tree', 'Tree/empty', 'Tree/sub', 'Tree/sub/deeper']);
  });

  it('with LOCAL, the files land at LOCAL/<path inside the folder>', async () => {
    const local = join(tempStage('recursive-local'), 'copy');
    const run = await runCli(
      ['fetch', '--recursive', 'personal:Tree/sub', local],
      clientEnv(broker.url, tempStage('recursive-local-stage')),
    );
    expect(run.code).toBe(ExitCode.ok);
    expect(readFileSync(join(local, 'a.txt'), 'utf8')).toBe('a');
    expect(readFileSync(join(local, 'deeper/b.txt'), 'utf8')).toBe('b');
  });

  it('a local file where a remote folder must go is refused before any file is fetched', async () => {
    const local = join(tempStage('recursive-clash'), 'copy');
    mkdirSync(local);
    writeFileSync(join(local, 'sub'), 'a local file named like the remote folder');
    const before = broker.auditLines().length;
    const run = await runCli(
      ['fetch', '--recursive', 'personal:Tree', local],
      clientEnv(broker.url, tempStage('recursive-clash-stage')),
    );
    expect(run.code).toBe(ExitCode.usage);
    expect(run.json.error).toMatch(
      /cannot mirror personal:Tree locally \(1 problem; nothing was fetched\): personal:Tree\/sub: a folder on Nextcloud, but .*copy\/sub is a local file/,
    );
    expect(existsSync(join(local, 'top.txt'))).toBe(false);
    const reads = broker
      .auditLines()
      .slice(before)
      .filter((l) => l.tool === 'read');
    expect(reads).toHaveLength(0);
  });

  it('a folder without a grant is refused by the wall (exit 3), a file is not a folder', async () => {
    await broker.fake.writeFile('Closed/x.txt', 'x');
    const closed = await runCli(
      ['fetch', '--recursive', 'personal:Closed'],
      clientEnv(broker.url, tempStage('recursive-closed')),
    );
    expect(closed.code).toBe(ExitCode.refused);
    const file = await runCli(
      ['fetch', '--recursive', 'personal:Tree/top.txt'],
      clientEnv(broker.url, tempStage('recursive-file')),
    );
    expect(file.code).toBe(ExitCode.refused);
    expect(file.json).toMatchObject({ code: 'not_a_folder' });
    expect(file.json.next_step).toMatch(/broker fetch personal:Tree\/top\.txt/);
  });

  it('takes one folder only', async () => {
    const run = await runCli(
      ['fetch', '--recursive', 'personal:Tree', 'personal:Closed'],
      clientEnv(broker.url, tempStage('recursive-two')),
    );
    expect(run.code).toBe(ExitCode.usage);
    expect(run.json.error).toMatch(/--recursive takes one INSTANCE:FOLDER/);
  });
});
