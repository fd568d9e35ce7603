/**
 * Attack, on a real Nextcloud (34, and 29 in the oldest-series run): fill the quota so that Nextcloud's own expiry purges
 * the owner's trash bin. With a 120 MB quota and the default retention (`auto`), the
 * background job deletes the oldest trash bin items once the trash bin holds half the
 * free space (files_trashbin `Trashbin::expire`; docs/nextcloud-behaviour.md). The
 * owner trashes three 12 MB files of their own; the agent, with write on one folder,
 * pushes and trashes 12 MB files until the broker refuses (`insufficient_space`, exit 3).
 * The owner then saves a 12 MB file of their own, and the background jobs run twice (as
 * cron does): the owner's trash bin items and versions are all still there.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { nextSecond } from '../../fakes/nextcloud.js';
import { call } from '../../support/mcp.js';
import { useRealRig } from './rig.js';

const rig = useRealRig();
const MB12 = 12_000_000;

/**
 * One cron run (NC_CRON: `cron.php`). Not `occ background-job:worker --once`: on 34.0.1
 * that left the queued expiry jobs unrun.
 */
async function cron(): Promise<void> {
  await rig.server.cron();
}

beforeAll(async () => {
  await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', '120 MB');
});
afterAll(async () => {
  await rig.server.occ('user:setting', rig.server.owner.user, 'files', 'quota', 'none');
});

describe('attack: fill the quota so that Nextcloud expires the owner’s trash bin (real server)', () => {
  it('the broker refuses before the zone; two cron runs and an expiry delete nothing of the owner’s', async () => {
    // The owner's own: a file with earlier versions, and three trashed files.
    for (const n of [1, 2, 3]) {
      await nextSecond();
      await rig.owner.writeFile('Owner/keep.bin', Buffer.alloc(1_000_000, n));
    }
    // Nextcloud thins versions made seconds apart by age alone (files_versions'
    // auto-expiry, not space): let that happen first, so what is left is the baseline.
    await cron();
    await sleep(1100);
    await cron();
    const versions = await rig.owner.versions('Owner/keep.bin');
    expect(versions).toBeGreaterThanOrEqual(1);
    for (const n of [1, 2, 3]) {
      await rig.owner.writeFile(`Owner/old${n}.bin`, Buffer.alloc(MB12, n));
      expect((await rig.owner.del(`Owner/old${n}.bin`)).status).toBe(204);
    }
    const ownerTrash = (await rig.owner.trash()).map((t) => t.item).sort();
    expect(ownerTrash).toHaveLength(3);

    await rig.owner.mkdirs('Agent');
    await rig.broker.grant([{ path: 'Agent', mode: 'write' }]);
    const stage = rig.stage();
    const refusals: unknown[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      const src = join(stage, `big${n}.bin`);
      writeFileSync(src, Buffer.alloc(MB12, 10 + n));
      const pushed = await rig.cli(['push', `personal:Agent/big${n}.bin`, src], stage);
      if (pushed.code !== ExitCode.ok) {
        // A refusal naming space, never "retry later" (2).
        expect(pushed.code).toBe(ExitCode.refused);
        refusals.push(pushed.json);
        continue;
      }
      const trashed = await call(rig.agent, 'trash', {
        instance: 'personal',
        path: `Agent/big${n}.bin`,
      });
      if (trashed['status'] !== 'ok') refusals.push(trashed);
    }
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(JSON.stringify(refusal)).toContain('insufficient_space');
      expect(JSON.stringify(refusal)).toMatch(/not enough space: .* MB more free space is needed/);
    }

    // The owner saves 12 MB of their own (under the tenth of the quota the broker keeps):
    // had the agent filled the trash bin to the edge, this write would queue the expiry
    // that deletes the owner's oldest trash bin item.
    await rig.owner.writeFile('Owner/save.bin', Buffer.alloc(MB12, 7));
    // Nextcloud's background jobs, twice (a job queued in the same second waits for the
    // next run): the expiry a write queues when the trash bin is over its share runs.
    await cron();
    await sleep(1100);
    await cron();
    const after = (await rig.owner.trash()).map((t) => t.item);
    expect(after).toEqual(expect.arrayContaining(ownerTrash));
    expect(await rig.owner.versions('Owner/keep.bin')).toBe(versions);
  });
});
