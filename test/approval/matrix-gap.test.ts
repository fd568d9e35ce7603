/**
 * A gap in the bot's sync: when more happened in the room than one /sync carries, the
 * homeserver answers with the latest events only (`limited`), honestly, as Synapse does.
 * No owner decision may be lost to it: the bot reads the gap back (/messages) and
 * handles what it missed, in order, once. Real Rust crypto on the phone and the bot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GAP_NOTICE } from '../../broker/approval/matrix/inbound.js';
import { BOT, e2eeRig, type E2eeRig } from '../../support/matrix.js';

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig();
}, 30_000);
afterAll(async () => {
  await rig.close();
});

/** Holds the bot's sync while `during` runs, then lets it catch up. */
async function whileBotLags(during: () => Promise<void>): Promise<void> {
  const release = rig.hs.holdSync(BOT);
  try {
    await during();
  } finally {
    release();
  }
}

describe("the bot's sync has a gap (an honest, Synapse-like server)", () => {
  it('a typed decision and a vote in the gap both count, in order, once', async () => {
    const a = await rig.post();
    const b = await rig.post();
    let approve = '';
    let vote = '';
    await whileBotLags(async () => {
      approve = await rig.say(rig.phone, `approve ${a.id}`);
      vote = await rig.vote(rig.phone, b.pollId, 'deny');
      for (let i = 0; i < 12; i += 1) await rig.say(rig.phone, `more to read, ${i}`);
    });
    expect((await rig.handledOf(approve)).kind).toBe('text');
    expect((await rig.handledOf(vote)).kind).toBe('vote');
    expect(rig.state(a.id)).toBe('approved');
    expect(rig.state(b.id)).toBe('denied');
    expect(rig.decisions(a.id)).toHaveLength(1);
    expect(rig.handled.filter((h) => h.eventId === approve)).toHaveLength(1);
  });

  it('a deny in the gap and an approve after it: the deny, which came first, decides', async () => {
    const { id } = await rig.post();
    let deny = '';
    await whileBotLags(async () => {
      deny = await rig.say(rig.phone, `deny ${id}`);
      for (let i = 0; i < 12; i += 1) await rig.say(rig.phone, `filler ${i}`);
      await rig.say(rig.phone, `approve ${id}`);
    });
    await rig.handledOf(deny);
    expect(rig.state(id)).toBe('denied');
    expect(rig.active(id)).toEqual([]);
  });
});

describe('a gap the bot cannot read back', () => {
  it('longer than it reads: nothing in it is acted on, and the owner is told to send again', async () => {
    await rig.restart({ gapReadLimit: 5 });
    const { id } = await rig.post();
    let approve = '';
    await whileBotLags(async () => {
      approve = await rig.say(rig.phone, `approve ${id}`);
      // The sync carries the last 10; the 20 before them are more than the bot reads back.
      for (let i = 0; i < 29; i += 1) await rig.say(rig.phone, `filler ${i}`);
    });
    await rig.settled();
    expect(rig.handled.some((h) => h.eventId === approve)).toBe(false);
    expect(rig.state(id)).toBe('pending');
    expect(await rig.noticesSeenBy(rig.phone)).toContain(GAP_NOTICE);
  }, 30_000);

  it('a homeserver that refuses /messages: the owner is told', async () => {
    await rig.restart();
    const { id } = await rig.post();
    const toldBefore = (await rig.noticesSeenBy(rig.phone)).filter((t) => t === GAP_NOTICE);
    rig.hs.failRoute(/\/messages$/);
    try {
      await whileBotLags(async () => {
        await rig.say(rig.phone, `approve ${id}`);
        for (let i = 0; i < 12; i += 1) await rig.say(rig.phone, `filler ${i}`);
      });
      await rig.settled();
    } finally {
      rig.hs.failRoute(undefined);
    }
    expect(rig.state(id)).toBe('pending');
    const told = (await rig.noticesSeenBy(rig.phone)).filter((t) => t === GAP_NOTICE);
    expect(told.length).toBe(toldBefore.length + 1);
  }, 30_000);
});
