/**
 * Pairing the owner's phone (`broker pair`, docs/contracts.md §6) against the ways a
 * code could pin the wrong device, none of which may pin anything: a wrong code, an
 * expired one, the agent's session of the owner's account typing the code before or
 * after the owner (with the homeserver withholding the phone's copy), a refusal at the
 * host's prompt, `--expect` naming another device, and a `pair CODE` message that is not
 * the phone's own encrypted words, or is one counted already. Real matrix-js-sdk with
 * Rust crypto on the phone, on the agent's session and on the bot; the lying fake
 * homeserver; the host's side through the pairing desk the owner socket drives.
 * A pin that does happen is matrix-pairing-pin.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PAIR_CODE_VALID_MS } from '../../broker/approval/pairing/code.js';
import type { PairingUpdate } from '../../broker/approval/pairing/desk.js';
import { eventSeenBy } from '../../support/e2ee-client.js';
import { BOT, OWNER, ROOM, textEdit } from '../../support/matrix.js';
import { pairingRig, type HostPairing, type PairingRig } from '../../support/pairing.js';

let p: PairingRig;
let host: HostPairing | undefined;

beforeAll(async () => {
  p = await pairingRig();
}, 30_000);
afterEach(async () => {
  await host?.session.cancel();
  host = undefined;
});
afterAll(async () => {
  await p.close();
});

const ended = (u: PairingUpdate) => (u.stage === 'ended' ? u : undefined);

/** The phone's `pair CODE`, handled by the bot. */
async function type(who: 'phone' | 'laptop', code: string): Promise<string> {
  const sent = await p.rig.say(p.rig[who], `pair ${code}`);
  await p.rig.handledOf(sent);
  return sent;
}

function pinRecords(): Record<string, unknown>[] {
  return p.rig.core.records().filter((r) => r.event === 'pin');
}

/** Nothing pinned, and the phone's typed approval still decides nothing. */
async function phoneStillDecidesNothing(): Promise<void> {
  expect(p.pins.entries()).toEqual([]);
  const { id } = await p.rig.post();
  const sent = await p.rig.say(p.rig.phone, `approve ${id}`);
  expect((await p.rig.handledOf(sent)).kind).toBe('refused_device');
  expect(p.rig.refusals(sent)).toEqual([
    expect.objectContaining({ reason: 'unpinned_device', device_id: p.rig.phone.deviceId }),
  ]);
  expect(p.rig.state(id)).toBe('pending');
}

describe('a wrong code', () => {
  it('pins nothing; the host hears of it and keeps waiting for the right one', async () => {
    host = await p.open();
    const sent = await type('phone', 'zzzzz-zzzzz');
    expect((await p.rig.handledOf(sent)).kind).toBe('pair');
    const told = await host.next('wrong_code');
    expect(told).toMatchObject({ device: { deviceId: p.rig.phone.deviceId } });
    expect(host.updates.some((u) => u.stage === 'ended')).toBe(false);
    expect(pinRecords().at(-1)).toMatchObject({
      action: 'claim',
      outcome: 'wrong_code',
      device_id: p.rig.phone.deviceId,
      event_id: sent,
    });
    await phoneStillDecidesNothing();
  });
});

describe('an expired code', () => {
  it('ten minutes after broker pair printed it, the right code pins nothing', async () => {
    host = await p.open();
    p.rig.core.clock.now += PAIR_CODE_VALID_MS;
    await type('phone', host.session.code);
    expect(ended(await host.next('ended'))).toMatchObject({ outcome: 'expired' });
    await phoneStillDecidesNothing();
  });

  it('its timer ends the pairing though no device ever sent the code', async () => {
    host = await p.open();
    expect(p.timers.fire(PAIR_CODE_VALID_MS)).toBe(1);
    expect(ended(await host.next('ended'))).toMatchObject({ outcome: 'expired', devices: [] });
    // The command's code no longer works: a late try is "used", never a claim.
    await type('phone', host.session.code);
    expect(pinRecords().at(-1)).toMatchObject({ action: 'claim', outcome: 'used' });
    expect(p.pins.entries()).toEqual([]);
  });
});

describe('a refusal at the host', () => {
  it('shows the phone\'s session id and key, and "no" pins nothing; the code is spent', async () => {
    host = await p.open();
    await type('phone', host.session.code);
    const claimed = await host.next('claimed');
    expect(claimed).toMatchObject({
      device: { deviceId: p.rig.phone.deviceId, ed25519: p.rig.phone.ed25519 },
    });
    await host.session.confirm(false);
    expect(ended(await host.next('ended'))).toMatchObject({ outcome: 'declined' });
    await type('phone', host.session.code);
    expect(pinRecords().at(-1)).toMatchObject({ action: 'claim', outcome: 'used' });
    await phoneStillDecidesNothing();
  });
});

describe('--expect naming another device', () => {
  it("the phone's code pins nothing and ends the pairing", async () => {
    host = await p.open('OTHERDEVICE');
    await type('phone', host.session.code);
    expect(ended(await host.next('ended'))).toMatchObject({
      outcome: 'not_expected',
      devices: [{ deviceId: p.rig.phone.deviceId }],
    });
    await phoneStillDecidesNothing();
  });
});

describe("attack: the agent's session types the code before the owner (the homeserver withholds the phone's copy)", () => {
  it("the host is shown the agent's session, not the phone; refused there, nothing is pinned", async () => {
    host = await p.open();
    const withheld = p.rig.hs.lie.nextSend(OWNER, { withhold: true });
    const phoneSent = await p.rig.say(p.rig.phone, `pair ${host.session.code}`);
    expect(await withheld).toBe(phoneSent);
    await type('laptop', host.session.code);
    const claimed = await host.next('claimed');
    expect(claimed).toMatchObject({
      device: { deviceId: p.rig.laptop.deviceId, ed25519: p.rig.laptop.ed25519 },
    });
    // The owner compares with the phone in their hand: not this session.
    await host.session.confirm(false);
    await host.next('ended');
    p.rig.hs.lie.release(phoneSent);
    await p.rig.handledOf(phoneSent);
    expect(pinRecords().at(-1)).toMatchObject({ outcome: 'used', event_id: phoneSent });
    await phoneStillDecidesNothing();
  });

  it('the phone\'s copy released before the host answered: two devices, nothing pinned even on "yes"', async () => {
    host = await p.open();
    const withheld = p.rig.hs.lie.nextSend(OWNER, { withhold: true });
    const phoneSent = await p.rig.say(p.rig.phone, `pair ${host.session.code}`);
    await withheld;
    await type('laptop', host.session.code);
    await host.next('claimed');
    p.rig.hs.lie.release(phoneSent);
    await p.rig.handledOf(phoneSent);
    const end = ended(await host.next('ended'));
    expect(end).toMatchObject({ outcome: 'several_devices' });
    expect(end?.devices.map((d) => d.deviceId)).toEqual([
      p.rig.laptop.deviceId,
      p.rig.phone.deviceId,
    ]);
    await host.session.confirm(true);
    await phoneStillDecidesNothing();
    expect(pinRecords().filter((r) => r['action'] === 'pinned')).toEqual([]);
  });
});

describe("attack: the agent's session types the code after the owner", () => {
  it('before the host answered: two devices, nothing pinned, and the room is told', async () => {
    host = await p.open();
    const phoneSent = await type('phone', host.session.code);
    await host.next('claimed');
    // Every session of the account can read what the phone typed: the agent's reads it.
    const seen = await eventSeenBy(p.rig.laptop, ROOM, phoneSent);
    const body = String(seen.getClearContent()?.['body']);
    expect(body).toBe(`pair ${host.session.code}`);
    const laptopSent = await p.rig.say(p.rig.laptop, body);
    await p.rig.handledOf(laptopSent);
    expect(ended(await host.next('ended'))).toMatchObject({ outcome: 'several_devices' });
    await host.session.confirm(true);
    expect(p.pins.entries()).toEqual([]);
    const notice = p.rig.handled.find((h) => h.eventId === laptopSent)?.reply?.text ?? '';
    expect(notice).toContain('Two sessions sent the same pairing code');
    expect(notice).toContain(p.rig.laptop.deviceId);
    await phoneStillDecidesNothing();
  });
});

describe('a `pair CODE` message is judged as a decision is, but for the pin', () => {
  it("made up in clear text by the homeserver in the owner's name: refused, the host hears nothing", async () => {
    host = await p.open();
    const forged = p.rig.hs.lie.inject(OWNER, ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: `pair ${host.session.code}`,
    });
    expect((await p.rig.handledOf(forged)).kind).toBe('refused_device');
    expect(p.rig.refusals(forged)).toEqual([expect.objectContaining({ reason: 'not_encrypted' })]);
    expect(host.updates).toEqual([]);
  });

  it('an edit of the phone\'s words into "pair CODE" decides nothing', async () => {
    host = await p.open();
    const said = await p.rig.say(p.rig.phone, 'hello');
    await p.rig.handledOf(said);
    const edit = await p.rig.send(
      p.rig.phone,
      'm.room.message',
      textEdit(said, `pair ${host.session.code}`),
    );
    expect((await p.rig.handledOf(edit)).kind).toBe('refused_edit');
    expect(p.rig.refusals(edit)).toEqual([expect.objectContaining({ reason: 'edited' })]);
    expect(host.updates).toEqual([]);
  });

  it("the phone's message served again under another event id counts once", async () => {
    host = await p.open();
    const sent = await type('phone', host.session.code);
    await host.next('claimed');
    const again = p.rig.hs.lie.resend(sent);
    expect((await p.rig.handledOf(again)).kind).toBe('refused_replay');
    expect(host.updates.map((u) => u.stage)).toEqual(['claimed']);
    expect(p.rig.refusals(again)).toEqual([
      expect.objectContaining({ reason: 'replay', first_event_id: sent }),
    ]);
  });

  it("from the bot's account, or in clear text in the bot's name: ignored", async () => {
    host = await p.open();
    const forged = p.rig.hs.lie.inject(BOT, ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: `pair ${host.session.code}`,
    });
    expect((await p.rig.handledOf(forged)).kind).toBe('ignore');
    expect(host.updates).toEqual([]);
  });
});

describe('the code itself', () => {
  it('is never written to the audit log, the broker log or the room', async () => {
    host = await p.open();
    const { code } = host.session;
    await type('phone', code);
    await host.next('claimed');
    await host.session.confirm(false);
    await host.next('ended');
    const canonical = code.replace('-', '');
    const audit = readFileSync(join(p.rig.core.dir, 'audit.log'), 'utf8');
    const logs = JSON.stringify([p.rig.logger.lines, p.rig.core.logger.lines]);
    const bot = JSON.stringify(p.rig.hs.timeline(ROOM).filter((e) => e.sender === BOT));
    const replies = JSON.stringify(p.rig.handled.map((h) => h.reply));
    for (const text of [audit, logs, bot, replies]) {
      expect(text).not.toContain(code);
      expect(text).not.toContain(canonical);
    }
  });
});
