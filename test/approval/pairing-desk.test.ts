/**
 * The pairing desk (broker/approval/pairing/desk.ts) on its own: real pins in a data
 * folder, a real audit log, the clock and timers in the test's hands. What the Matrix
 * side feeds it is matrix-pairing*.test.ts's; here, its rules, and the invariant that a
 * device is pinned only when it alone sent the code and the host said yes after seeing
 * it (or named it in advance).
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PAIR_CONFIRM_MS } from '../../broker/approval/pairing/code.js';
import {
  PairingDesk,
  type PairingDevice,
  type PairingUpdate,
} from '../../broker/approval/pairing/desk.js';
import { readPinFile } from '../../broker/approval/pairing/pin-file.js';
import { ApproverPins } from '../../broker/approval/pairing/pins.js';
import { harness, M, type Harness } from '../../support/approval.js';
import { manualTimers } from '../../support/manual-timers.js';

const KEY = (c: string) => c.repeat(43);
const PHONE: PairingDevice = { deviceId: 'PHONEDEVICE', ed25519: KEY('p') };
const LAPTOP: PairingDevice = { deviceId: 'LAPTOPDEVICE', ed25519: KEY('l') };
const CONFIGURED = { deviceId: 'OLDPHONE', ed25519: KEY('o') };

let h: Harness;
let dir: string;

beforeEach(async () => {
  h = await harness();
  dir = mkdtempSync(join(tmpdir(), 'desk-'));
});
afterEach(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

function desk(): { desk: PairingDesk; pins: ApproverPins; fire: () => number } {
  const pins = ApproverPins.open({
    config: [CONFIGURED],
    dataDir: dir,
    audit: h.audit,
    now: () => h.clock.now,
    logger: h.logger,
  });
  const timers = manualTimers();
  let n = 0;
  const d = new PairingDesk({
    approver: '@owner:hs.test',
    pins,
    audit: h.audit,
    now: () => h.clock.now,
    // Distinct codes, reproducibly.
    randomBytes: (size) => new Uint8Array(size).fill((n += 1)),
    timers,
    logger: h.logger,
  });
  return { desk: d, pins, fire: () => timers.fire() };
}

async function open(d: PairingDesk, expect?: string) {
  const updates: PairingUpdate[] = [];
  const opened = await d.open(expect, (u) => updates.push(u));
  if (!opened.ok) throw new Error(opened.message);
  return { session: opened.session, updates };
}

describe('the desk', () => {
  it('runs one pairing at a time', async () => {
    const { desk: d } = desk();
    await open(d);
    expect(await d.open(undefined, () => undefined)).toMatchObject({
      ok: false,
      message: expect.stringContaining('another "broker pair" is waiting'),
    });
  });

  it('answers a code with no pairing open, and a code of a cancelled one as used', async () => {
    const { desk: d } = desk();
    expect((await d.claim('01abc-defgh', PHONE, '$1')).outcome).toBe('no_pairing');
    const { session } = await open(d);
    await session.cancel();
    expect((await d.claim(session.code, PHONE, '$2')).outcome).toBe('used');
    expect(
      h
        .records()
        .filter((r) => r.event === 'pin')
        .map((r) => r['action']),
    ).toEqual(['claim', 'started', 'ended', 'claim']);
  });

  it('a device pinned in the configuration: already pinned, nothing written', async () => {
    const { desk: d } = desk();
    const { session, updates } = await open(d);
    expect((await d.claim(session.code, CONFIGURED, '$1')).outcome).toBe('already_pinned');
    expect(updates).toEqual([expect.objectContaining({ outcome: 'already_pinned' })]);
    expect(readPinFile(dir)).toEqual([]);
  });

  it('a "yes" after the confirmation window pins nothing', async () => {
    const { desk: d } = desk();
    const { session, updates } = await open(d);
    await d.claim(session.code, PHONE, '$1');
    h.clock.now += PAIR_CONFIRM_MS;
    await session.confirm(true);
    expect(updates.at(-1)).toMatchObject({ stage: 'ended', outcome: 'expired' });
    expect(readPinFile(dir)).toEqual([]);
  });

  it('the confirmation timer ends a claimed pairing the host never answered', async () => {
    const { desk: d, fire } = desk();
    const { session, updates } = await open(d);
    await d.claim(session.code, PHONE, '$1');
    expect(fire()).toBe(1);
    await session.confirm(true).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 10));
    expect(updates.at(-1)).toMatchObject({ stage: 'ended', outcome: 'expired' });
    expect(readPinFile(dir)).toEqual([]);
  });
});

describe("attack: the agent's session floods the room with wrong codes", () => {
  it('each is audited; the room is told once per session and pairing', async () => {
    const { desk: d } = desk();
    const { session } = await open(d);
    const answers = [];
    for (let i = 0; i < 5; i += 1) answers.push(await d.claim('zzzzz-zzzzz', LAPTOP, `$${i}`));
    expect(answers.map((a) => a.outcome)).toEqual(Array(5).fill('wrong_code'));
    expect(answers.map((a) => a.reply !== undefined)).toEqual([true, false, false, false, false]);
    expect((await d.claim('zzzzz-zzzzz', PHONE, '$p')).reply).toBeDefined();
    const claims = h.records().filter((r) => r.event === 'pin' && r['action'] === 'claim');
    expect(claims).toHaveLength(6);
    await session.cancel();
  });
});

describe('attack: the audit log cannot record the pin', () => {
  it('the pin is undone: nothing in the file, nothing in force, the host told it failed', async () => {
    const { desk: d, pins } = desk();
    const { session, updates } = await open(d);
    await d.claim(session.code, PHONE, '$1');
    h.failAudit(true);
    await session.confirm(true);
    expect(updates.at(-1)).toMatchObject({ stage: 'ended', outcome: 'failed' });
    expect(readPinFile(dir)).toEqual([]);
    expect(pins.source()).toEqual([CONFIGURED]);
  });
});

describe('unpin', () => {
  it('refuses a configured device and an unknown one', async () => {
    const { pins } = desk();
    expect(await pins.unpin('OLDPHONE', { actor: 'socket' })).toMatchObject({
      ok: false,
      code: 'config_pin',
    });
    expect(await pins.unpin('NOPE', { actor: 'socket' })).toMatchObject({
      ok: false,
      code: 'not_pinned',
    });
  });
});

type Step =
  | { kind: 'claim'; device: 'phone' | 'laptop'; right: boolean }
  | { kind: 'answer'; pin: boolean }
  | { kind: 'wait'; minutes: number };

// Weighted towards what makes a pairing: claims of the right code, then answers.
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      device: fc.constantFrom('phone' as const, 'laptop' as const),
      right: fc.constantFrom(true, true, false),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('answer' as const), pin: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      minutes: fc.integer({ min: 0, max: 12 }),
    }),
  },
);

describe('property: only a device that alone sent the code, confirmed after it was shown, is pinned', () => {
  it('holds for any order of claims, answers and waits, with or without --expect', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 6 }),
        fc.constantFrom(undefined, undefined, 'PHONEDEVICE', 'LAPTOPDEVICE'),
        async (steps, expect_) => {
          rmSync(dir, { recursive: true, force: true });
          dir = mkdtempSync(join(tmpdir(), 'desk-'));
          const { desk: d } = desk();
          const { session } = await open(d, expect_);
          const rightSenders: string[] = [];
          let shownAt = -1;
          let yesAfterShown = false;
          for (const [i, s] of steps.entries()) {
            if (s.kind === 'wait') h.clock.now += s.minutes * M;
            else if (s.kind === 'answer') {
              if (s.pin && shownAt >= 0) yesAfterShown = true;
              await session.confirm(s.pin);
            } else {
              const device = s.device === 'phone' ? PHONE : LAPTOP;
              const pinnedBefore = readPinFile(dir).length > 0;
              const { outcome } = await d.claim(
                s.right ? session.code : 'zzzzz-zzzzz',
                device,
                `$${i}`,
              );
              if (s.right && !pinnedBefore) rightSenders.push(device.deviceId);
              if (outcome === 'claimed') shownAt = i;
            }
            const pinned = readPinFile(dir).map((p) => p.deviceId);
            expect(pinned.length).toBeLessThanOrEqual(1);
            if (pinned.length === 1) {
              const [id] = pinned;
              // The first to send the right code, and no other device before the pin.
              expect(rightSenders[0]).toBe(id);
              expect(new Set(rightSenders).size).toBe(1);
              if (expect_ === undefined) expect(yesAfterShown).toBe(true);
              else expect(id).toBe(expect_);
            }
          }
          await session.cancel();
        },
      ),
      { numRuns: 400 },
    );
  });
});
