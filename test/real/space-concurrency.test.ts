/**
 * Attack, on a real Nextcloud (34, and 29 in the oldest-series run), as the review
 * ran it (issue "Nothing lost, round four", items 1 and 3):
 * - four 12 MiB pushes at once with the one-file CLI on a 60 MB quota, the owner's 10 MiB
 *   file and a keepsake trashed first: each read the same free space, all four passed,
 *   and the next cron run deleted the owner's trash bin. Now two pass (as one by one) and
 *   two cron runs delete nothing;
 * - pushes into a folder bob shared, bob with a 60 MB quota: alice's quota was read and
 *   all passed, and one cron run wiped bob's trash bin. Now every one is refused, naming
 *   bob, and bob's trash bin stays; a sharer without a quota is written to as before.
 * Whether the four pushes overlap depends on the machine; with the ledger the answer is
 * two either way (the fake's test holds them together: test/operations/space-concurrency).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import type { CliRun } from '../../support/processes.js';
import { useRealRig } from './rig.js';

const rig = useRealRig();
const MiB = 1024 * 1024;

afterAll(async () => {
  for (const who of [rig.server.owner.user, rig.server.other.user])
    await rig.server.occ('user:setting', who, 'files', 'quota', 'none');
});

/** Two cron runs (a job queued in the same second waits for the next run). */
async function cronTwice(): Promise<void> {
  await rig.server.cron();
  await sleep(1100);
  await rig.server.cron();
}

/** `count` pushes of `size` bytes into `folder`, started together. */
async function pushAtOnce(folder: string, count: number, size: number): Promise<CliRun[]> {
  const stage = rig.stage();
  return Promise.all(
    Array.from({ length: count }, (_, i) => {
      const src = join(stage, `big${i}.bin`);
      writeFileSync(src, Buffer.alloc(size, 10 + i));
      return rig.cli(['push', `personal:${folder}/big${i}.bin`, src], stage);
    }),
  );
}

const codes = (runs: readonly CliRun[]): number[] => runs.map((r) => r.code).sort();

describe('attack: four pushes at once on a 60 MB quota (real server)', () => {
  it('two pass, as one by one; two cron runs delete nothing of the owner’s trash bin', async () => {
    await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', '60 MB');
    await rig.owner.writeFile('Owner/big.bin', Buffer.alloc(10 * MiB, 1));
    await rig.owner.writeFile('Owner/keepsake.txt', 'keep me');
    expect((await rig.owner.del('Owner/big.bin')).status).toBe(204);
    expect((await rig.owner.del('Owner/keepsake.txt')).status).toBe(204);
    const ownerTrash = (await rig.owner.trash()).map((t) => t.item).sort();
    expect(ownerTrash).toHaveLength(2);
    await rig.owner.mkdirs('Agent');
    await rig.broker.grant([{ path: 'Agent', mode: 'write' }]);

    const runs = await pushAtOnce('Agent', 4, 12 * MiB);
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok, ExitCode.refused, ExitCode.refused]);
    for (const run of runs.filter((r) => r.code !== ExitCode.ok))
      expect(run.json).toMatchObject({ code: 'insufficient_space' });

    await cronTwice();
    expect((await rig.owner.trash()).map((t) => t.item)).toEqual(
      expect.arrayContaining(ownerTrash),
    );
    await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', 'none');
  }, 180_000);
});

describe('attack: pushes into a folder another user shared (real server)', () => {
  it('bob has a 60 MB quota: all four are refused, naming bob; his trash bin stays', async () => {
    await rig.server.occ('user:setting', rig.server.other.user, 'files', 'quota', '60 MB');
    await rig.other.writeFile('Keep/old.bin', Buffer.alloc(10 * MiB, 2));
    expect((await rig.other.del('Keep/old.bin')).status).toBe(204);
    const bobTrash = (await rig.other.trash()).map((t) => t.item);
    expect(bobTrash).toHaveLength(1);
    await rig.other.writeFile('BobShared/inner.txt', 'from bob');
    await rig.receive('BobShared');
    await rig.broker.grant([{ path: 'BobShared', mode: 'write' }]);

    const runs = await pushAtOnce('BobShared', 4, 12 * MiB);
    expect(codes(runs)).toEqual(Array(4).fill(ExitCode.refused));
    for (const run of runs) {
      expect(run.json).toMatchObject({ code: 'insufficient_space' });
      expect(String(run.json.error)).toContain(`in a folder '${rig.server.other.user}' shared`);
    }
    expect(await rig.other.list('BobShared')).toEqual(['inner.txt']);
    await cronTwice();
    expect((await rig.other.trash()).map((t) => t.item)).toEqual(bobTrash);
  }, 180_000);

  it('a sharer without a quota: the pushes go through', async () => {
    await rig.server.occ('user:setting', rig.server.other.user, 'files', 'quota', 'none');
    await rig.other.writeFile('BobFree/inner.txt', 'from bob');
    await rig.receive('BobFree');
    await rig.broker.grant([{ path: 'BobFree', mode: 'write' }]);
    const runs = await pushAtOnce('BobFree', 2, MiB);
    expect(codes(runs)).toEqual([ExitCode.ok, ExitCode.ok]);
    expect((await rig.other.list('BobFree')).sort()).toEqual(['big0.bin', 'big1.bin', 'inner.txt']);
  }, 120_000);
});
