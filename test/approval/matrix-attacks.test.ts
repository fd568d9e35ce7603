/**
 * Who and what must never move a grant, through the real SDK and the fake homeserver:
 * strangers, look-alike IDs, other rooms, edits, reactions on messages the bot did not
 * post (including forged request markers), quoted text inside replies.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REQUEST_ID_KEY, type MatrixGateway } from '../../broker/approval/matrix/gateway.js';
import {
  BOT,
  matrixRig,
  OTHER_ROOM,
  OWNER,
  OWNER_LOOKALIKE,
  ROOM,
  STRANGER,
  type MatrixRig,
} from '../../support/matrix.js';

let rig: MatrixRig;
let gw: MatrixGateway;

beforeEach(async () => {
  rig = await matrixRig({ members: [OWNER, BOT, STRANGER, OWNER_LOOKALIKE] });
  rig.hs.createRoom({ id: OTHER_ROOM, members: [OWNER, BOT, STRANGER] });
  gw = await rig.start();
});
afterEach(async () => {
  await rig.close();
});

const stateOf = (id: number) => rig.core.store.getRequest(id)?.state;

describe('a stranger in the room', () => {
  it("a stranger's 👍 on a request grants nothing, is not answered, and is audited", async () => {
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    const notices = rig.botNotices().length;
    const handled = await rig.handledOf(rig.hs.reactAs(STRANGER, ROOM, messageId, '👍'));
    expect(handled.kind).toBe('stranger');
    expect(stateOf(request.id)).toBe('pending');
    expect(rig.core.store.activeGrants()).toHaveLength(0);
    // Security: the stranger is told nothing.
    expect(rig.botNotices()).toHaveLength(notices);
    expect(rig.core.records().filter((r) => r.event === 'refused')).toEqual([
      expect.objectContaining({ surface: 'matrix', actor: STRANGER, reason: 'not_approver' }),
    ]);
  });

  it("a stranger's typed approve grants nothing", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const handled = await rig.handledOf(rig.hs.sayAs(STRANGER, ROOM, `approve ${request.id}`));
    expect(handled.kind).toBe('stranger');
    expect(stateOf(request.id)).toBe('pending');
  });

  it("a stranger's chatter is not audited", async () => {
    await rig.handledOf(rig.hs.sayAs(STRANGER, ROOM, 'hello everyone'));
    expect(rig.core.records().filter((r) => r.event === 'refused')).toHaveLength(0);
  });

  it('a user with the same localpart on another server is not the approver', async () => {
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.reactAs(OWNER_LOOKALIKE, ROOM, messageId, '👍'));
    await rig.handledOf(rig.hs.sayAs(OWNER_LOOKALIKE, ROOM, `approve ${request.id}`));
    expect(stateOf(request.id)).toBe('pending');
  });

  it("a stranger redacting the approver's 👍 (as a moderator would) does not undo it", async () => {
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    const thumbs = rig.hs.reactAs(OWNER, ROOM, messageId, '👍');
    await rig.handledOf(thumbs);
    await rig.handledOf(rig.hs.redactAs(STRANGER, ROOM, thumbs));
    expect(rig.core.store.activeGrants().map((g) => g.requestId)).toEqual([request.id]);
  });
});

describe('edits', () => {
  it('editing a message into a command does nothing', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const original = rig.hs.sayAs(OWNER, ROOM, 'looks fine');
    await rig.handledOf(original);
    const handled = await rig.handledOf(
      rig.hs.editAs(OWNER, ROOM, original, `approve ${request.id}`),
    );
    expect(handled.kind).toBe('ignore');
    expect(stateOf(request.id)).toBe('pending');
  });

  it('editing "deny" into "approve" does not turn the denial into grants', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const deny = rig.hs.sayAs(OWNER, ROOM, `deny ${request.id}`);
    await rig.handledOf(deny);
    await rig.handledOf(rig.hs.editAs(OWNER, ROOM, deny, `approve ${request.id}`));
    expect(stateOf(request.id)).toBe('denied');
    expect(rig.core.store.activeGrants()).toHaveLength(0);
  });
});

describe('reactions on messages the bot did not post as a request', () => {
  it("the approver's 👍 on their own message does nothing", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const own = rig.hs.sayAs(OWNER, ROOM, `request ${request.id} please`);
    await rig.handledOf(own);
    const handled = await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, own, '👍'));
    expect(handled.kind).toBe('unknown_target');
    expect(stateOf(request.id)).toBe('pending');
  });

  it("a forged request marker in a stranger's message is not trusted", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const forged = rig.hs.sendAs(STRANGER, ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: `Request ${request.id} (looks just like the bot's)`,
      [REQUEST_ID_KEY]: request.id,
    });
    const handled = await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, forged, '👍'));
    expect(handled.kind).toBe('unknown_target');
    expect(stateOf(request.id)).toBe('pending');
  });

  it("the approver's 👍 on one of the bot's notices (not a request) does nothing", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'help'));
    const notice = rig.hs
      .timeline(ROOM)
      .filter((e) => e.sender === BOT && e.content['msgtype'] === 'm.notice')
      .at(-1);
    expect(notice).toBeDefined();
    const handled = await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, notice?.event_id ?? '', '👍'));
    expect(handled.kind).toBe('unknown_target');
    expect(stateOf(request.id)).toBe('pending');
  });

  it('a reaction pointing at an event that does not exist does nothing', async () => {
    const handled = await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, '$nope:hs.test', '👍'));
    expect(handled.kind).toBe('unknown_target');
  });
});

describe('other rooms', () => {
  it("the approver's command in another room the bot shares does nothing", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const handled = await rig.handledOf(rig.hs.sayAs(OWNER, OTHER_ROOM, `approve ${request.id}`));
    expect(handled.kind).toBe('ignore');
    expect(stateOf(request.id)).toBe('pending');
    expect(
      rig.hs.timeline(OTHER_ROOM).filter((e) => e.sender === BOT && e.type === 'm.room.message'),
    ).toHaveLength(0);
  });
});

describe('quoted text in replies', () => {
  it('replying to a stranger\'s "approve N" with chatter does not approve', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const bait = rig.hs.sayAs(STRANGER, ROOM, `approve ${request.id}`);
    await rig.handledOf(bait);
    const handled = await rig.handledOf(rig.hs.replyAs(OWNER, ROOM, bait, 'who are you?'));
    expect(handled.kind).toBe('not_a_command');
    expect(stateOf(request.id)).toBe('pending');
  });

  it('a multi-line quote is stripped whole, and the command after it counts', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const bait = rig.hs.sayAs(STRANGER, ROOM, `revoke all\napprove ${request.id}`);
    await rig.handledOf(bait);
    await rig.handledOf(rig.hs.replyAs(OWNER, ROOM, bait, `deny ${request.id}`));
    expect(stateOf(request.id)).toBe('denied');
  });
});

describe('notices and non-text messages', () => {
  it("the approver's m.notice or m.emote is not a command", async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    for (const msgtype of ['m.notice', 'm.emote']) {
      const id = rig.hs.sendAs(OWNER, ROOM, 'm.room.message', {
        msgtype,
        body: `approve ${request.id}`,
      });
      expect((await rig.handledOf(id)).kind).toBe('ignore');
    }
    expect(stateOf(request.id)).toBe('pending');
  });
});
