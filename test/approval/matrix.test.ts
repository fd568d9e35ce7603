/**
 * The Matrix gateway end to end: matrix-js-sdk against the fake homeserver, with the
 * real GrantStore, AuditLog and ApprovalEngine. The approver acts through the fake's
 * injection API exactly as a Matrix client would (reactions, typed messages, replies,
 * redactions).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REQUEST_ID_KEY, type MatrixGateway } from '../../broker/approval/matrix/gateway.js';
import { H, T0 } from '../../support/approval.js';
import { matrixRig, OWNER, ROOM, BOT, type MatrixRig } from '../../support/matrix.js';
import { until } from '../../support/until.js';

let rig: MatrixRig;
let gw: MatrixGateway;

beforeEach(async () => {
  rig = await matrixRig();
  gw = await rig.start();
});
afterEach(async () => {
  await rig.close();
});

const active = (requestId: number) =>
  rig.core.store.activeGrants().filter((g) => g.requestId === requestId);

describe('posting a request', () => {
  it('posts one message with the rendered request and pre-places 👍 👎 🛇 📋 as the bot', async () => {
    const { request, messageId } = await rig.post(gw, [
      ['Documents/taxes', 'read'],
      ['Photos/2024', 'write'],
    ]);
    const message = rig.hs.event(messageId);
    expect(message?.sender).toBe(BOT);
    expect(message?.type).toBe('m.room.message');
    expect(message?.content['msgtype']).toBe('m.text');
    expect(message?.content[REQUEST_ID_KEY]).toBe(request.id);
    expect(String(message?.content['body'])).toContain(`Request ${request.id}`);
    expect(String(message?.content['body'])).toContain('Documents/taxes');
    expect(message?.content['format']).toBe('org.matrix.custom.html');
    expect(String(message?.content['formatted_body'])).toContain('<code>Photos/2024</code>');
    const reactions = rig.hs
      .timeline(ROOM)
      .filter((e) => e.type === 'm.reaction')
      .map((e) => ({ sender: e.sender, rel: e.content['m.relates_to'] }));
    expect(reactions).toEqual(
      ['👍', '👎', '🛇', '📋'].map((key) => ({
        sender: BOT,
        rel: { rel_type: 'm.annotation', event_id: messageId, key },
      })),
    );
    expect(gw.healthy()).toBe(true);
  });

  it('announce() sends a notice', async () => {
    await gw.announce('grant 3 expired');
    expect(rig.botNotices()).toContain('grant 3 expired');
  });
});

describe('reactions from the approver', () => {
  it('👍 approves every item, with the default expiry, and confirms in the room', async () => {
    const { request, messageId } = await rig.post(gw, [
      ['Documents/taxes', 'read'],
      ['Photos/2024', 'write'],
    ]);
    const reaction = rig.hs.reactAs(OWNER, ROOM, messageId, '👍');
    const handled = await rig.handledOf(reaction);
    expect(handled.kind).toBe('reaction');
    const grants = active(request.id);
    expect(grants.map((g) => [g.path, g.mode])).toEqual([
      ['Documents/taxes', 'read'],
      ['Photos/2024', 'write'],
    ]);
    expect(grants.every((g) => g.expiresAt === T0 + 24 * H)).toBe(true);
    expect(rig.core.store.getRequest(request.id)?.decidedBy).toBe(OWNER);
    expect(rig.botNotices().some((t) => t.startsWith(`Approved request ${request.id}`))).toBe(true);
    const decision = rig.core.records().find((r) => r.event === 'decision');
    expect(decision).toMatchObject({ request: request.id, actor: OWNER });
  });

  it.each([
    ['skin tone', '👍🏽'],
    ['emoji presentation selector', '👍\u{FE0F}'],
  ])('👍 with a %s is 👍', async (_name, key) => {
    const { request, messageId } = await rig.post(gw, [['Notes', 'read']]);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, key));
    expect(active(request.id)).toHaveLength(1);
  });

  it('👎 denies', async () => {
    const { request, messageId } = await rig.post(gw, [['Notes', 'read']]);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '👎'));
    expect(rig.core.store.getRequest(request.id)?.state).toBe('denied');
    expect(active(request.id)).toHaveLength(0);
  });

  it('🛇 revokes what the request granted; 📋 answers with the status', async () => {
    const { request, messageId } = await rig.post(gw, [['Notes', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id}`));
    expect(active(request.id)).toHaveLength(1);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '📋'));
    expect(rig.botNotices().some((t) => t.startsWith('Active grants (1)'))).toBe(true);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '🛇'));
    expect(active(request.id)).toHaveLength(0);
  });

  it('an emoji outside the allow-list does nothing', async () => {
    const { request, messageId } = await rig.post(gw, [['Notes', 'read']]);
    const handled = await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '👌'));
    expect(handled.kind).toBe('not_a_command');
    expect(rig.core.store.getRequest(request.id)?.state).toBe('pending');
  });

  it('removing the approving 👍 revokes what it granted', async () => {
    const { request, messageId } = await rig.post(gw, [['Notes', 'read']]);
    const thumbs = rig.hs.reactAs(OWNER, ROOM, messageId, '👍');
    await rig.handledOf(thumbs);
    expect(active(request.id)).toHaveLength(1);
    const handled = await rig.handledOf(rig.hs.redactAs(OWNER, ROOM, thumbs));
    expect(handled.kind).toBe('redaction');
    expect(active(request.id)).toHaveLength(0);
    expect(rig.core.store.grant(handled.reply?.revoked?.[0]?.id ?? -1)?.state).toBe('revoked');
  });

  it('removing a 👍 that granted nothing (request already decided by a typed command) changes nothing', async () => {
    const { request, messageId } = await rig.post(gw, [
      ['A', 'read'],
      ['B', 'read'],
    ]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id} 1`));
    const thumbs = rig.hs.reactAs(OWNER, ROOM, messageId, '👍');
    expect((await rig.handledOf(thumbs)).reply?.text).toContain('already decided');
    const handled = await rig.handledOf(rig.hs.redactAs(OWNER, ROOM, thumbs));
    expect(handled.kind).toBe('unknown_target');
    expect(active(request.id).map((g) => g.path)).toEqual(['A']);
  });
});

describe('typed commands from the approver', () => {
  it('partial approval grants only the named items', async () => {
    const { request } = await rig.post(gw, [
      ['A', 'read'],
      ['B', 'write'],
      ['C', 'read'],
    ]);
    const cmd = rig.hs.sayAs(OWNER, ROOM, `approve ${request.id} 1,3`);
    const handled = await rig.handledOf(cmd);
    expect(handled.kind).toBe('text');
    expect(active(request.id).map((g) => g.path)).toEqual(['A', 'C']);
    expect(rig.core.store.getRequest(request.id)?.state).toBe('partially_approved');
    // The confirmation is a reply to the command.
    const confirmation = rig.hs
      .timeline(ROOM)
      .find(
        (e) =>
          e.sender === BOT &&
          (e.content['m.relates_to'] as { 'm.in_reply_to'?: { event_id: string } } | undefined)?.[
            'm.in_reply_to'
          ]?.event_id === cmd,
      );
    expect(String(confirmation?.content['body'])).toContain('2 of 3 items');
  });

  it('a custom expiry is used; one above lifecycle.max_grant is refused and grants nothing', async () => {
    const first = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${first.request.id} 2h`));
    expect(active(first.request.id).map((g) => g.expiresAt)).toEqual([T0 + 2 * H]);

    const second = await rig.post(gw, [['B', 'read']]);
    const handled = await rig.handledOf(
      rig.hs.sayAs(OWNER, ROOM, `approve ${second.request.id} 8d`),
    );
    expect(handled.reply?.text).toContain('above the maximum');
    expect(active(second.request.id)).toHaveLength(0);
    expect(rig.core.store.getRequest(second.request.id)?.state).toBe('pending');
  });

  it('deny N, then approve N answers "already decided"', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `deny ${request.id}`));
    const again = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id}`));
    expect(again.reply?.text).toContain('already decided');
    expect(active(request.id)).toHaveLength(0);
  });

  it('revoke N / revoke <instance> / revoke all', async () => {
    const a = await rig.post(gw, [['A', 'read']], 'personal');
    const b = await rig.post(gw, [['B', 'read']], 'work');
    const c = await rig.post(gw, [['C', 'read']], 'personal');
    for (const r of [a, b, c]) {
      await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${r.request.id}`));
    }
    expect(rig.core.store.activeGrants()).toHaveLength(3);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `revoke ${a.request.id}`));
    expect(rig.core.store.activeGrants().map((g) => g.path)).toEqual(['B', 'C']);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'revoke work'));
    expect(rig.core.store.activeGrants().map((g) => g.path)).toEqual(['C']);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'revoke all'));
    expect(rig.core.store.activeGrants()).toHaveLength(0);
  });

  it('status lists the active grants; help lists the commands; chatter is ignored', async () => {
    const { request } = await rig.post(gw, [['Documents/taxes', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id}`));
    const status = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'status'));
    expect(status.reply?.text).toContain('Documents/taxes');
    const help = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'help'));
    expect(help.reply?.text).toContain('revoke all');
    const chatter = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, 'thanks, bot'));
    expect(chatter.kind).toBe('not_a_command');
  });

  it('a reply to the request message is parsed without its quoted fallback', async () => {
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    const handled = await rig.handledOf(
      rig.hs.replyAs(OWNER, ROOM, messageId, `approve ${request.id}`),
    );
    expect(handled.kind).toBe('text');
    expect(active(request.id)).toHaveLength(1);
  });

  it('a malformed command gets a reason, and changes nothing', async () => {
    const { request } = await rig.post(gw, [['A', 'read']]);
    const handled = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id} 9`));
    expect(handled.reply?.text).toMatch(/items 1 to 1/);
    expect(rig.core.store.getRequest(request.id)?.state).toBe('pending');
  });
});

describe('attack: a request too large for one message', () => {
  const long = (i: number): string =>
    `Docs/${Array.from({ length: 13 }, () => `${i}`.padEnd(200, 'y')).join('/')}/f${i}.txt`;
  const flood = (): [string, 'read' | 'write'][] => [
    ['Docs', 'write'],
    ...Array.from({ length: 49 }, (_, i): [string, 'read'] => [long(i), 'read']),
  ];

  it('the request message stays short, lists write Docs first, and points to show N', async () => {
    const { request, messageId } = await rig.post(gw, flood());
    const body = String(rig.hs.event(messageId)?.content['body']);
    expect(body.length).toBeLessThan(2_000);
    expect(body.split('\n')[3]).toBe('1. write `Docs`');
    expect(body).toContain(`… and 42 more items: type "show ${request.id}"`);
    expect(body).toContain('create, overwrite, move and trash anything inside it');
  });

  it('show N answers in several messages the homeserver accepts, with every path in full', async () => {
    const items = flood();
    const { request } = await rig.post(gw, items);
    const before = rig.botNotices().length;
    const handled = await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `show ${request.id}`));
    expect(handled.reply?.continued?.length).toBeGreaterThan(0);
    const parts = 1 + (handled.reply?.continued?.length ?? 0);
    await until('every part in the room', () => rig.botNotices().length - before === parts);
    const sent = rig.botNotices().slice(before);
    expect(sent[0]).toContain(`(part 1 of ${parts})`);
    const all = sent.join('\n');
    for (const [i, [path, mode]] of items.entries())
      expect(all).toContain(`${i + 1}. ${mode} \`${path}\``);
    expect(rig.logger.lines.join('')).not.toContain('matrix send failed');
  });
});
