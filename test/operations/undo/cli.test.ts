/**
 * `broker undo` (docs/contracts.md §6) as a real subprocess against a running broker
 * (in this process, on the fake Nextcloud) over its owner socket: the dry run changes
 * nothing, the undo is shown where the owner watches, the exit codes (0 all undone, 1
 * usage or no such record, 2 no broker, 5 some left) and the one JSON object.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextSecond } from '../../../fakes/nextcloud.js';
import { push, replace } from '../../../support/agent-writes.js';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { runCli } from '../../../support/processes.js';

let broker: Broker;
let config: string;
let request: number;

const undo = (...args: string[]) => runCli(['undo', ...args, '--config', config], {});
const read = async (path: string): Promise<string | undefined> =>
  (await broker.fake.readFile(path))?.toString();

beforeAll(async () => {
  broker = await startBroker();
  config = join(mkdtempSync(join(tmpdir(), 'undo-cli-')), 'config.yaml');
  // The owner's shell needs no secret: only data_dir is read.
  writeFileSync(config, `data_dir: ${broker.dir}\n`);
  await broker.fake.writeFile('C/a.txt', 'the owner');
  request = await broker.grant([{ path: 'C', mode: 'write' }]);
  const transfer = await broker.transfer();
  await nextSecond();
  await replace(broker.url, transfer, 'C/a.txt', 'the agent');
  await push(broker.url, transfer, 'C/new.txt', 'new');
});
afterAll(async () => {
  await broker.close();
  rmSync(join(config, '..'), { recursive: true, force: true });
});

describe('broker undo', () => {
  it('--dry-run: says what it would do, changes nothing (exit 0)', async () => {
    const run = await undo('--request', String(request), '--dry-run', '--json');
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({
      status: 'ok',
      target: { request },
      dry_run: true,
      items: [
        { tool: 'blob_put', path: 'C/new.txt', result: 'would_undo' },
        { tool: 'blob_put', path: 'C/a.txt', result: 'would_undo' },
      ],
    });
    expect(await read('C/a.txt')).toBe('the agent');
    expect(await read('C/new.txt')).toBe('new');
  });

  it('undoes, prints one line per operation, and is shown where the owner watches', async () => {
    const run = await undo('--request', String(request));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Undo of request ${request}: 2 of 2 operation(s) done`);
    expect(await read('C/a.txt')).toBe('the owner');
    expect(await broker.fake.exists('C/new.txt')).toBe(false);
    expect(broker.gateway.announcements.join('\n')).toContain(
      `(owner socket): broker undo --request ${request}`,
    );
    // Audited with the owner socket as the actor.
    expect(broker.auditLines().filter((l) => l.event === 'undo' && l.stage === 'outcome')).toEqual(
      expect.arrayContaining([expect.objectContaining({ actor: 'socket', result: 'undone' })]),
    );
  });

  it('some left as they are: exit 5, status "left", each with why', async () => {
    const transfer = await broker.transfer();
    await nextSecond();
    await replace(broker.url, transfer, 'C/a.txt', 'the agent again');
    const seq = Number(broker.auditLines().findLast((l) => l.tool === 'blob_put')?.seq);
    await nextSecond();
    await broker.fake.writeFile('C/a.txt', 'the owner, after');
    const run = await undo(String(seq), '--json');
    expect(run.code).toBe(5);
    expect(run.json).toMatchObject({
      status: 'left',
      items: [{ seq, result: 'changed_since', now: { path: 'C/a.txt', exists: true } }],
    });
  });

  it('usage: no target, both targets, a bad seq, no such record: exit 1', async () => {
    expect((await undo()).code).toBe(1);
    expect((await undo('3', '--request', '1')).code).toBe(1);
    const bad = await undo('three', '--json');
    expect(bad.code).toBe(1);
    expect(bad.json).toMatchObject({
      status: 'failed',
      error: 'the record number (the seq of the operation) must be a number (got "three")',
      next_step: expect.stringContaining('broker audit tail'),
    });
    const none = await undo('999999', '--json');
    expect(none.code).toBe(1);
    expect(none.json).toMatchObject({ status: 'failed', error: expect.stringContaining('999999') });
  });

  it("every failure in one format: the problem once, and this command's next step", async () => {
    // A bad SEQ (refused by the console's parser in the broker): no "undo: " twice, no
    // console "help".
    const bad = await undo('abc');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toBe(
      'broker undo: the record number (the seq of the operation) must be a number (got "abc")\n' +
        '  next: give the seq of an operation (`broker audit tail` lists them) or --request N; see `broker undo --help`\n',
    );
    // Refused by the undo itself (no such record): the same format, not the console's.
    const none = await undo('999999');
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toBe(
      'broker undo: the audit log has no record 999999\n  next: run `broker audit tail` for the seqs\n',
    );
    // A local usage error: the same format again.
    const usage = await undo();
    expect(usage.stderr).toMatch(
      /^broker undo: usage: broker undo SEQ .*\n {2}next: run `broker undo --help`\n$/,
    );
  });

  it('no broker running for the data folder: exit 2, saying to start it', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'undo-cli-none-'));
    try {
      writeFileSync(join(elsewhere, 'config.yaml'), `data_dir: ${elsewhere}\n`);
      const run = await runCli(
        ['undo', '1', '--json', '--config', join(elsewhere, 'config.yaml')],
        {},
      );
      expect(run.code).toBe(2);
      expect(run.json).toMatchObject({
        status: 'failed',
        next_step: expect.stringContaining('broker serve'),
      });
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
