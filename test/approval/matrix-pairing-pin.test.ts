/**
 * A pairing that pins (`broker pair`, docs/contracts.md §6): the owner's phone, not
 * pinned in the configuration, sends the code; the host is shown its session id and key
 * and confirms; from then on the phone reads what the bot posts and its typed approval
 * and its poll vote decide. The code is then used up, the pin survives a restart, and
 * `broker unpin` takes it back. Real matrix-js-sdk with Rust crypto on the phone, the
 * agent's session and the bot, on the fake homeserver.
 */
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pinFilePath, readPinFile } from '../../broker/approval/pairing/pin-file.js';
import { fetchPreflightClient } from '../../broker/doctor/matrix-client.js';
import { checkEncryption } from '../../broker/doctor/matrix-devices.js';
import { eventSeenBy } from '../../support/e2ee-client.js';
import { ROOM } from '../../support/matrix.js';
import { pairingRig, type PairingRig } from '../../support/pairing.js';
import { until } from '../../support/until.js';

let p: PairingRig;
let code = '';

beforeAll(async () => {
  p = await pairingRig();
}, 30_000);
afterAll(async () => {
  await p.close();
});

async function phoneApproves(how: 'typed' | 'vote'): Promise<void> {
  const { id, messageId, pollId } = await p.rig.post();
  const message = await eventSeenBy(p.rig.phone, ROOM, messageId);
  expect(message.isDecryptionFailure()).toBe(false);
  const sent =
    how === 'typed'
      ? await p.rig.say(p.rig.phone, `approve ${id}`)
      : await p.rig.vote(p.rig.phone, pollId, 'approve');
  expect((await p.rig.handledOf(sent)).kind).toBe(how === 'typed' ? 'text' : 'vote');
  expect(p.rig.state(id)).toBe('approved');
}

describe('the phone, confirmed on the host', () => {
  it('is pinned: shown with its own session id and key, written 0600, audited, told in the room', async () => {
    const host = await p.open();
    code = host.session.code;
    await p.rig.say(p.rig.phone, `pair ${code}`);
    const claimed = await host.next('claimed');
    expect(claimed).toMatchObject({
      device: { deviceId: p.rig.phone.deviceId, ed25519: p.rig.phone.ed25519 },
    });
    expect(p.pins.entries()).toEqual([]);
    await host.session.confirm(true);
    expect(await host.next('ended')).toMatchObject({ outcome: 'pinned' });
    expect(p.pins.entries()).toEqual([
      expect.objectContaining({
        deviceId: p.rig.phone.deviceId,
        ed25519: p.rig.phone.ed25519,
        origin: 'paired',
      }),
    ]);
    expect(readPinFile(p.rig.dataDir)).toEqual([
      expect.objectContaining({ deviceId: p.rig.phone.deviceId, ed25519: p.rig.phone.ed25519 }),
    ]);
    expect(statSync(pinFilePath(p.rig.dataDir)).mode & 0o777).toBe(0o600);
    expect(
      p.rig.core.records().filter((r) => r.event === 'pin' && r['action'] === 'pinned'),
    ).toEqual([
      expect.objectContaining({
        actor: 'socket',
        device_id: p.rig.phone.deviceId,
        ed25519: p.rig.phone.ed25519,
        confirmed: 'host',
      }),
    ]);
    // The confirmation is the first thing the newly pinned phone can read.
    await until('the phone reads the confirmation', async () =>
      (await p.rig.noticesSeenBy(p.rig.phone)).some((t) =>
        t.startsWith(`Pinned session \`${p.rig.phone.deviceId}\``),
      ),
    );
  });

  it('broker doctor counts it pinned, read from the data folder', async () => {
    const cfg = p.rig.config();
    expect(cfg.approver_devices).toEqual([]);
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), p.rig.dataDir);
    expect(checks.find((c) => c.label.includes(`session ${p.rig.phone.deviceId}`))).toMatchObject({
      status: 'pass',
    });
    expect(checks.some((c) => c.status === 'fail')).toBe(false);
  });

  it("then the phone's typed approval decides", async () => {
    await phoneApproves('typed');
  });

  it('and its poll vote decides', async () => {
    await phoneApproves('vote');
  });

  it("the agent's session is still not pinned: its approval decides nothing", async () => {
    const { id } = await p.rig.post();
    const sent = await p.rig.say(p.rig.laptop, `approve ${id}`);
    expect((await p.rig.handledOf(sent)).kind).toBe('refused_device');
    expect(p.rig.state(id)).toBe('pending');
  });
});

describe('a code used twice', () => {
  it("the agent's session typing it after the pin changes nothing, and the room names the pinned device", async () => {
    const sent = await p.rig.say(p.rig.laptop, `pair ${code}`);
    const handled = await p.rig.handledOf(sent);
    expect(handled.kind).toBe('pair');
    expect(handled.reply?.text).toContain('already used');
    expect(handled.reply?.text).toContain(`broker unpin \`${p.rig.phone.deviceId}\``);
    expect(p.pins.entries().map((e) => e.deviceId)).toEqual([p.rig.phone.deviceId]);
  });
});

describe('across a restart', () => {
  it('the paired phone still decides', async () => {
    await p.rig.restart();
    await phoneApproves('typed');
  });
});

describe('broker unpin', () => {
  it("ends the phone's say and its reading: a new request is unreadable to it, its approval refused", async () => {
    const result = await p.pins.unpin(p.rig.phone.deviceId, { actor: 'socket' });
    expect(result).toMatchObject({ ok: true });
    expect(readPinFile(p.rig.dataDir)).toEqual([]);
    expect(
      p.rig.core.records().filter((r) => r.event === 'pin' && r['action'] === 'unpinned'),
    ).toEqual([expect.objectContaining({ device_id: p.rig.phone.deviceId })]);
    const { id, messageId } = await p.rig.post();
    const message = await eventSeenBy(p.rig.phone, ROOM, messageId);
    expect(message.isDecryptionFailure()).toBe(true);
    const sent = await p.rig.say(p.rig.phone, `approve ${id}`);
    await p.rig.handledOf(sent);
    expect(p.rig.refusals(sent)).toEqual([expect.objectContaining({ reason: 'unpinned_device' })]);
    expect(p.rig.state(id)).toBe('pending');
  });

  it('leaves broker doctor failing with the way to pair', async () => {
    const cfg = p.rig.config();
    const checks = await checkEncryption(cfg, fetchPreflightClient(cfg, 2_000), p.rig.dataDir);
    expect(checks).toContainEqual(
      expect.objectContaining({
        status: 'fail',
        label: 'no pinned device of the approver is known to the homeserver',
        fix: expect.stringContaining('broker pair'),
      }),
    );
  });
});

describe('--expect naming the phone', () => {
  it('pins it as soon as it sends the code, without a question at the host', async () => {
    const host = await p.open(p.rig.phone.deviceId);
    await p.rig.say(p.rig.phone, `pair ${host.session.code}`);
    expect(await host.next('ended')).toMatchObject({ outcome: 'pinned' });
    expect(host.updates.map((u) => u.stage)).toEqual(['ended']);
    const pinned = p.rig.core
      .records()
      .filter((r) => r.event === 'pin' && r['action'] === 'pinned');
    expect(pinned).toEqual([
      expect.objectContaining({ confirmed: 'host' }),
      expect.objectContaining({ confirmed: 'expect', device_id: p.rig.phone.deviceId }),
    ]);
    await phoneApproves('vote');
  });
});
