/**
 * Attack: writes started together all pass the space guard, each having read the same
 * free space (issue "Nothing lost, round four", item 1: four 12 MiB pushes at once on a
 * 60 MB quota all passed where one by one two would have; the next cron run deleted the
 * owner's trash bin). And item 3: a folder another user shared is their space, whose
 * trash bin and versions this account cannot see at all.
 *
 * The real CLI as four subprocesses at once, against the daemon and the fake Nextcloud.
 * The fake holds every PUT until each push has been decided (the gate), so the four are
 * truly in flight together whatever the machine's load: without the ledger
 * (operations/space-ledger.ts) all four are admitted. Sizes are scaled down (1 U =
 * 10 KiB stands for 1 MiB); the rule is in proportions.
 *
 * And moves between owners' spaces (issue "Nothing lost, round four", by hand on 34 and
 * 29): a push into bob's folder was refused, but the agent's `move` of a file pushed into
 * its own space carried it there unchecked, three times, and bob's next save purged his
 * trash bin; back out of his folder, a move added bytes to this account's space unchecked.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { ownerDeletes } from '../../support/fake-requests.js';
import { call } from '../../support/mcp.js';
import { startBroker, type Broker, type BrokerOptions } from '../../support/daemon.js';
import { runCli, type CliRun } from '../../support/processes.js';
import { APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';
import { until } from '../../support/until.js';

const U = 10 * 1024;
/** Each push makes a file of its own name. */
let pushed = 0;

let broker: Broker;

async function start(opts: BrokerOptions = {}): Promise<void> {
  broker = await startBroker(opts);
}
beforeEach(async () => {
  await start();
});
afterEach(async () => {
  broker.fake.faults.putGate = null;
  await broker.close();
});

/** The owner deletes a file of their own (outside any grant) into the trash bin. */
async function ownerTrashes(path: string): Promise<void> {
  expect(await ownerDeletes(broker.fake, APP_PASSWORD, path)).toBe(204);
}

/**
 * `broker push` of `count` files of `size` bytes into `folder`, all at once, with every
 * PUT to Nextcloud held until each push was decided (a PUT arrived, or the CLI exited).
 */
async function pushAtOnce(folder: string, count: number, size: number): Promise<CliRun[]> {
  const stage = mkdtempSync(join(tmpdir(), 'broker-concurrent-'));
  const env = {
    BROKER_URL: broker.url,
    BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
    BROKER_STAGE_DIR: stage,
  };
  let release = (): void => undefined;
  broker.fake.faults.putGate = new Promise<void>((resolve) => (release = resolve));
  const puts = (): number => broker.fake.requests.filter((r) => r.method === 'PUT').length;
  const before = puts();
  let exited = 0;
  const runs = Array.from({ length: count }, (_, i) => {
    const name = `big${pushed++}.bin`;
    const src = join(stage, name);
    writeFileSync(src, Buffer.alloc(size, 10 + i));
    return runCli(['push', `personal:${folder}/${name}`, src], env).then((run) => {
      exited += 1;
      return run;
    });
  });
  await until('every push decided', () => puts() - before + exited >= count, 60_000);
  release();
  return Promise.all(runs);
}

const codes = (runs: readonly CliRun[]): number[] => runs.map((r) => r.code).sort();

describe('attack: four pushes at once pass the space guard together', () => {
  it('a 60 MB quota, the owner’s 10 MiB file and a keepsake trashed: two of four pass, as one by one; expiry deletes nothing', async () => {
    broker.fake.setQuota(60 * U);
    await broker.fake.writeFile('Owner/big.bin', Buffer.alloc(10 * U, 1));
    await broker.fake.writeFile('Owner/keepsake.txt', 'keep me');
    await ownerTrashes('Owner/big.bin');
    await ownerTrashes('Owner/keepsake.txt');
    await broker.fake.mkdir('Agent');
    await broker.grant([{ path: 'Agent', mode: 'write' }]);

    const runs = await pushAtOnce('Agent', 4, 12 * U);
    // One by one: 2 × 10 U trash + the headroom (6 U) must stay below what is free.
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok, ExitCode.refused, ExitCode.refused]);
    for (const refusal of runs.filter((r) => r.code === ExitCode.refused)) {
      expect(refusal.json).toMatchObject({ code: 'insufficient_space' });
      expect(String(refusal.json.error)).toMatch(/not enough space: this upload/);
    }
    // Nextcloud's background job, twice: the owner's trash bin keeps everything.
    expect(await broker.fake.runExpiry()).toEqual([]);
    expect(await broker.fake.runExpiry()).toEqual([]);
    expect(broker.fake.trashed()).toEqual(
      expect.arrayContaining(['Owner/big.bin', 'Owner/keepsake.txt']),
    );
    // The refusals name the writes still in flight that they counted.
    const refused = broker
      .auditLines()
      .filter((l) => l.event === 'outcome' && l.code === 'insufficient_space');
    expect(refused.length).toBeGreaterThanOrEqual(2);
  });

  it('every reservation is released once its upload ended: the next push is judged on what Nextcloud holds', async () => {
    broker.fake.setQuota(60 * U);
    await broker.fake.mkdir('Agent');
    await broker.grant([{ path: 'Agent', mode: 'write' }]);
    // Four of 12 U at once: 48 U + the headroom fit 60 U only up to four.
    const runs = await pushAtOnce('Agent', 4, 11 * U);
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok, ExitCode.ok, ExitCode.ok]);
    // A fifth of 11 U would leave 5 U: refused; one of 1 U passes (nothing is held).
    const more = await pushAtOnce('Agent', 1, 11 * U);
    expect(codes(more)).toEqual([ExitCode.refused]);
    const small = await pushAtOnce('Agent', 1, U);
    expect(codes(small)).toEqual([ExitCode.ok]);
  });
});

describe('where a new file lands decides whose space it is', () => {
  it('a new file at the top of the account: its folder is the home, the account’s own', async () => {
    broker.fake.setQuota(60 * U);
    await broker.grant([{ path: 'top.bin', mode: 'write' }]);
    const stage = mkdtempSync(join(tmpdir(), 'broker-top-'));
    writeFileSync(join(stage, 'top.bin'), Buffer.alloc(U, 1));
    const pushed = await runCli(['push', 'personal:top.bin', join(stage, 'top.bin')], {
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
      BROKER_STAGE_DIR: stage,
    });
    expect(pushed.code).toBe(ExitCode.ok);
    expect((await broker.fake.readFile('top.bin'))?.length).toBe(U);
  });
});

describe('attack: pushes into a folder another user shared (their space)', () => {
  async function bobShares(ownerQuota: number | null): Promise<void> {
    await broker.fake.writeFile('BobShared/inner.txt', 'from bob');
    await broker.fake.receiveShare('BobShared', { owner: 'bob', ownerQuota });
    await broker.grant([{ path: 'BobShared', mode: 'write' }]);
  }

  it('bob has a quota: every push is refused, naming bob and why; nothing lands in his folder', async () => {
    await bobShares(60 * U);
    const runs = await pushAtOnce('BobShared', 4, 12 * U);
    expect(codes(runs)).toEqual(Array(4).fill(ExitCode.refused));
    for (const run of runs) {
      expect(run.json).toMatchObject({ code: 'insufficient_space' });
      expect(String(run.json.error)).toContain("in a folder 'bob' shared with this account");
      expect(String(run.json.error)).toContain('cannot see their trash bin or versions');
    }
    expect(broker.fake.requests.filter((r) => r.method === 'PUT')).toEqual([]);
  });

  it('bob has no quota: the pushes go through (no space-driven expiry can follow)', async () => {
    await bobShares(null);
    const runs = await pushAtOnce('BobShared', 2, 12 * U);
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok]);
  });

  it('the server keeps young trash and versions, declared: pushes pass within bob’s free space, judged together although Nextcloud shows it five minutes old', async () => {
    await broker.close();
    await start({
      retention: {
        trashbin_retention_obligation: '30, 60',
        versions_retention_obligation: 'disabled',
      },
    });
    await bobShares(40 * U);
    // Nextcloud caches bob's free space for five minutes: every push reads 40 U.
    const runs = await pushAtOnce('BobShared', 4, 12 * U);
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok, ExitCode.ok, ExitCode.refused]);
    const refused = runs.find((r) => r.code === ExitCode.refused);
    expect(String(refused?.json.error)).toMatch(/Nextcloud shows free in their space/);
  });
});

describe('attack: moves carry bytes into another user’s space (a push by another name)', () => {
  const moves = (): number => broker.fake.requests.filter((r) => r.method === 'MOVE').length;

  /** The agent's `move` tool. */
  async function move(from: string, to: string) {
    return call(await broker.agent(), 'move', { instance: 'personal', from, to });
  }

  /** Bob shares BobShared (with `ownerQuota`); the agent may write there and in Work. */
  async function scene(ownerQuota: number | null): Promise<void> {
    await broker.fake.writeFile('BobShared/inner.txt', 'from bob');
    await broker.fake.receiveShare('BobShared', { owner: 'bob', ownerQuota });
    await broker.fake.mkdir('Work');
    await broker.grant([
      { path: 'Work', mode: 'write' },
      { path: 'BobShared', mode: 'write' },
    ]);
  }

  it('bob has a quota: a file pushed into this account’s space and moved into his folder is refused, naming him, every time; nothing moves', async () => {
    await scene(60 * U);
    // The agent's own space has no quota: each push there passes.
    for (const n of [1, 2, 3])
      await broker.fake.writeFile(`Work/r1-${n}.bin`, Buffer.alloc(21 * U, n));
    for (const n of [1, 2, 3]) {
      const answer = await move(`Work/r1-${n}.bin`, `BobShared/r1-${n}.bin`);
      expect(answer).toMatchObject({ status: 'refused', code: 'insufficient_space' });
      expect(String(answer.message)).toContain(
        '"BobShared/r1-' + n + ".bin\" is in a folder 'bob' shared with this account",
      );
      expect(String(answer.message)).toContain('this move');
    }
    expect(moves()).toBe(0);
    for (const n of [1, 2, 3]) expect(await broker.fake.exists(`Work/r1-${n}.bin`)).toBe(true);
    expect(await broker.fake.exists('BobShared/r1-1.bin')).toBe(false);
  });

  it('out of bob’s folder into this account’s space that cannot take it: refused, saying what is needed; nothing moves', async () => {
    await scene(null);
    // 60 U quota, 10 U in the trash bin: 35 U more would leave 25 U free, under
    // 2 × 10 U + the headroom (6 U).
    broker.fake.setQuota(60 * U);
    await broker.fake.writeFile('Owner/old.bin', Buffer.alloc(10 * U, 1));
    await ownerTrashes('Owner/old.bin');
    await broker.fake.writeFile('BobShared/big.bin', Buffer.alloc(35 * U, 2));
    const answer = await move('BobShared/big.bin', 'Work/big.bin');
    expect(answer).toMatchObject({ status: 'refused', code: 'insufficient_space' });
    expect(String(answer.message)).toMatch(/^not enough space: this move \(358\.4 kB\)/);
    expect(String(answer.message)).toMatch(/more free space is needed; nothing was done/);
    expect(moves()).toBe(0);
    expect(await broker.fake.exists('BobShared/big.bin')).toBe(true);
    expect(await broker.fake.runExpiry()).toEqual([]);
    // A smaller one fits, and is judged the same way: it goes.
    await broker.fake.writeFile('BobShared/small.bin', Buffer.alloc(5 * U, 3));
    expect(await move('BobShared/small.bin', 'Work/small.bin')).toMatchObject({ status: 'ok' });
  });

  it('a move within one user’s space is not weighed, even where a push would be refused', async () => {
    await scene(60 * U);
    // This account's space is in the zone already (the owner's own 40 U file).
    broker.fake.setQuota(60 * U);
    await broker.fake.writeFile('Owner/old.bin', Buffer.alloc(10 * U, 1));
    await ownerTrashes('Owner/old.bin');
    await broker.fake.writeFile('Owner/big.bin', Buffer.alloc(40 * U, 2));
    await broker.fake.writeFile('Work/mine.bin', Buffer.alloc(U, 3));
    await broker.fake.mkdir('Work/sub');
    expect(await move('Work/mine.bin', 'Work/sub/mine.bin')).toMatchObject({ status: 'ok' });
    // Inside bob's folder (a push there is refused): his bytes stay his.
    await broker.fake.mkdir('BobShared/sub');
    expect(await move('BobShared/inner.txt', 'BobShared/sub/inner.txt')).toMatchObject({
      status: 'ok',
    });
    expect(moves()).toBe(2);
  });

  it('bob has no quota: moves into his folder and back go through', async () => {
    await scene(null);
    await broker.fake.writeFile('Work/r1-1.bin', Buffer.alloc(21 * U, 1));
    expect(await move('Work/r1-1.bin', 'BobShared/r1-1.bin')).toMatchObject({ status: 'ok' });
    expect(await move('BobShared/r1-1.bin', 'Work/back.bin')).toMatchObject({ status: 'ok' });
    expect((await broker.fake.readFile('Work/back.bin'))?.length).toBe(21 * U);
  });
});
