/**
 * Attack: fill the quota so that Nextcloud's own expiry purges the owner's trash bin.
 * With a quota, Nextcloud's background job deletes the oldest trash bin items once the
 * trash bin holds half the free space (docs/nextcloud-behaviour.md#space-driven-expiry),
 * the owner's own included: so an agent with write on one folder that pushes and trashes
 * big files would have the owner's trash deleted for it. The broker reads the space
 * before each upload and trash and refuses (`insufficient_space`, CLI exit 3) what would
 * bring the account into that zone; the fake's expiry (the rule Nextcloud runs) then
 * deletes nothing.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import fc from 'fast-check';
import { headroomOf, spaceAfter } from '../../broker/operations/space-guard.js';
import { ownerDeletes } from '../../support/fake-requests.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { runCli } from '../../support/processes.js';
import { APP_PASSWORD, TRANSFER_TOKEN } from '../../support/tokens.js';

const FILE = 12_000;
const QUOTA = 120_000;

let broker: Broker;
let agent: Client;

/** The owner deletes a file of their own (outside any grant) into the trash bin. */
async function ownerTrashes(path: string): Promise<void> {
  expect(await ownerDeletes(broker.fake, APP_PASSWORD, path)).toBe(204);
}

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  broker.fake.setQuota(QUOTA);
  for (const n of [1, 2, 3]) {
    await broker.fake.writeFile(`Owner/old${n}.bin`, Buffer.alloc(FILE, n));
    await ownerTrashes(`Owner/old${n}.bin`);
  }
  await broker.fake.mkdir('Agent');
  await broker.grant([{ path: 'Agent', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});

describe('attack: fill the quota so that Nextcloud expires the owner’s trash bin', () => {
  it('push and trash are refused with insufficient_space before the zone; the owner’s next save and expiry then delete nothing', async () => {
    const stage = mkdtempSync(join(tmpdir(), 'broker-space-'));
    const env = {
      BROKER_URL: broker.url,
      BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
      BROKER_STAGE_DIR: stage,
    };
    const pushes: { code: number; json: unknown }[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      const src = join(stage, `big${n}.bin`);
      writeFileSync(src, Buffer.alloc(FILE, 10 + n));
      const pushed = await runCli(['push', `personal:Agent/big${n}.bin`, src], env);
      pushes.push({ code: pushed.code, json: pushed.json });
      if (pushed.code !== ExitCode.ok) continue;
      await call(agent, 'trash', { instance: 'personal', path: `Agent/big${n}.bin` });
    }
    const refusedPush = pushes.find((p) => p.code !== ExitCode.ok);
    // A refusal, never "retry later" (2).
    expect(refusedPush?.code).toBe(ExitCode.refused);
    expect(JSON.stringify(refusedPush?.json)).toContain('insufficient_space');
    expect(JSON.stringify(refusedPush?.json)).toContain('not enough space');

    // The owner saves a file of their own as big as the headroom the broker keeps: had the
    // agent filled the trash bin to the edge, this save would tip it and the owner's oldest
    // trash bin item would go.
    await broker.fake.writeFile('Owner/save.bin', Buffer.alloc(headroomOf(QUOTA), 7));
    // Nextcloud's background job, twice: nothing of the owner's goes.
    expect(await broker.fake.runExpiry()).toEqual([]);
    expect(await broker.fake.runExpiry()).toEqual([]);
    expect(broker.fake.trashed()).toEqual(
      expect.arrayContaining(['Owner/old1.bin', 'Owner/old2.bin', 'Owner/old3.bin']),
    );

    // A trash that would cross the line is refused as well.
    await broker.fake.writeFile('Agent/owner-made.bin', Buffer.alloc(FILE, 9));
    const refusedTrash = await call(agent, 'trash', {
      instance: 'personal',
      path: 'Agent/owner-made.bin',
    });
    expect(refusedTrash).toMatchObject({ status: 'refused', code: 'insufficient_space' });
    expect(String(refusedTrash['message'])).toMatch(
      /^not enough space: .* in the trash bin, .* more free space is needed/,
    );
    const outcome = broker
      .auditLines()
      .filter((l) => l.tool === 'trash' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'insufficient_space' });
  });

  it('the rule: the trash bin stays under half of quota minus used, less a tenth of the quota', () => {
    const space = { quota: 100, used: 0, trash: 0 };
    expect(spaceAfter(space, { kind: 'upload', bytes: 100 })?.short).toBe(11);
    expect(spaceAfter(space, { kind: 'upload', bytes: 90 })?.short).toBe(1);
    expect(spaceAfter(space, { kind: 'upload', bytes: 89 })?.short).toBe(0);
    expect(spaceAfter({ ...space, trash: 30 }, { kind: 'upload', bytes: 30 })?.short).toBe(1);
    expect(spaceAfter({ ...space, trash: 30 }, { kind: 'upload', bytes: 29 })?.short).toBe(0);
    expect(
      spaceAfter({ quota: 100, used: 60, trash: 0 }, { kind: 'trash', bytes: 30 })?.short,
    ).toBe(1);
    expect(
      spaceAfter({ quota: 100, used: 60, trash: 0 }, { kind: 'trash', bytes: 29 })?.short,
    ).toBe(0);
    expect(spaceAfter({ ...space, quota: null }, { kind: 'upload', bytes: 1e12 })).toBeNull();
  });

  it('property: what the guard lets through leaves the owner a tenth of the quota to save before the zone, and `short` is exactly what is missing', () => {
    const quota = fc.integer({ min: 10, max: 2 ** 40 });
    const account = quota.chain((q) =>
      fc.record({
        quota: fc.constant(q),
        used: fc.integer({ min: 0, max: q }),
        trash: fc.integer({ min: 0, max: q }),
      }),
    );
    const change = fc.record({
      kind: fc.constantFrom('upload' as const, 'trash' as const),
      bytes: fc.integer({ min: 0, max: 2 ** 32 }),
    });
    fc.assert(
      fc.property(account, change, (space, c) => {
        if (c.kind === 'trash' && c.bytes > space.used) return;
        const after = spaceAfter(space, c);
        if (after === null) throw new Error('a quota was set');
        // Nextcloud's zone after the owner saves `w` more bytes of files: the trash bin at
        // or above half of what is then free (or anything at all once nothing is free).
        const inZone = (w: number): boolean => {
          const free = after.free - w;
          return free <= 0 || 2 * after.trash >= free;
        };
        if (after.short === 0) expect(inZone(headroomOf(space.quota))).toBe(false);
        else {
          // With `short` more bytes free it would pass, with one byte less not.
          const freed = { ...space, used: space.used - after.short };
          expect(spaceAfter(freed, c)?.short).toBe(0);
          const almost = { ...space, used: space.used - after.short + 1 };
          expect(spaceAfter(almost, c)?.short).toBe(1);
        }
      }),
    );
  });
});

describe('the space read stays cheap and never blocks what is safe', () => {
  it('without a quota, only cloud/user is read: no trash listing for the space', async () => {
    broker.fake.setQuota(null);
    const before = broker.fake.requests.length;
    await broker.fake.writeFile('Agent/small.txt', 'x');
    expect(
      await call(agent, 'trash', { instance: 'personal', path: 'Agent/small.txt' }),
    ).toMatchObject({ status: 'ok' });
    // The one trash listing is the one after the DELETE, finding the item's entry.
    const sent = broker.fake.requests.slice(before);
    const deleted = sent.findIndex((r) => r.method === 'DELETE');
    expect(deleted).toBeGreaterThan(0);
    expect(sent.slice(0, deleted).filter((r) => r.path.includes('/dav/trashbin/'))).toEqual([]);
    expect(sent.slice(deleted).filter((r) => r.path.includes('/dav/trashbin/'))).toHaveLength(1);
  });

  it('with a quota and the trash bin app off, an upload that fits is not refused', async () => {
    broker.fake.setQuota(QUOTA * 10);
    broker.fake.faults.trashbin = false;
    try {
      const stage = mkdtempSync(join(tmpdir(), 'broker-space-'));
      const src = join(stage, 'fits.bin');
      writeFileSync(src, Buffer.alloc(FILE, 1));
      const pushed = await runCli(['push', 'personal:Agent/fits.bin', src], {
        BROKER_URL: broker.url,
        BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
        BROKER_STAGE_DIR: stage,
      });
      expect(pushed.code).toBe(ExitCode.ok);
    } finally {
      broker.fake.faults.trashbin = true;
    }
  });
});
