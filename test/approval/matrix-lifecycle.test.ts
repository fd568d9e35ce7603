/**
 * Starting, refusing to start, restarting and losing the homeserver: the Matrix
 * gateway through matrix-js-sdk against the fake homeserver.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MatrixGatewayError } from '../../broker/approval/matrix/errors.js';
import { UNAVAILABLE_MESSAGE } from '../../broker/approval/matrix/gateway.js';
import { ApprovalUnavailableError } from '../../broker/approval/gateway.js';
import type { RoomSpec } from '../../fakes/homeserver.js';
import {
  BOT,
  matrixRig,
  OWNER,
  ROOM,
  STRANGER,
  TOKENS,
  type MatrixRig,
} from '../../support/matrix.js';
import { until } from '../../support/until.js';

let rig: MatrixRig | undefined;

/** No client is left polling: after in-flight requests land, nothing new arrives. */
async function expectQuiet(r: MatrixRig): Promise<void> {
  await new Promise((res) => setTimeout(res, 100));
  const before = r.hs.requests.length;
  await new Promise((res) => setTimeout(res, 400));
  expect(r.hs.requests.slice(before).map((q) => q.path)).toEqual([]);
}

function newRequest(r: MatrixRig) {
  const request = r.core.store.getRequest(r.core.request([['A', 'read']]));
  if (request === undefined) throw new Error('no request');
  return request;
}
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function refusal(
  room: Partial<RoomSpec>,
  opts: { token?: string; roomId?: string } = {},
): Promise<MatrixGatewayError> {
  rig = await matrixRig({ room });
  const gw = rig.gateway({
    ...(opts.token === undefined ? {} : { token: opts.token }),
    ...(opts.roomId === undefined ? {} : { room: opts.roomId }),
  });
  const err = await gw.start().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MatrixGatewayError);
  const e = err as MatrixGatewayError;
  // Security: no refusal carries the bot's token.
  expect(e.message).not.toContain(TOKENS[BOT]);
  expect(gw.healthy()).toBe(false);
  await expect(gw.postRequest(newRequest(rig))).rejects.toBeInstanceOf(ApprovalUnavailableError);
  // A refused start leaves no sync loop behind.
  await expectQuiet(rig);
  return e;
}

describe('refusing to start', () => {
  it('in an encrypted room, with the documented message', async () => {
    const e = await refusal({ encrypted: true });
    expect(e.code).toBe('encrypted');
    expect(e.message).toBe(
      `room ${ROOM} is encrypted but matrix.encryption is off; set matrix.encryption: required and pin the approver's devices (matrix.approver_devices; broker doctor lists them), or use an unencrypted invite-only room`,
    );
  });

  it.each(['public', 'knock', 'restricted'] as const)(
    'in a room whose join rule is %s',
    async (joinRule) => {
      const e = await refusal({ joinRule });
      expect(e.code).toBe('not_invite_only');
      expect(e.message).toContain(`join rule "${joinRule}"`);
    },
  );

  it('with a token the homeserver does not know', async () => {
    const e = await refusal({}, { token: 'not-a-real-token-0123456789abcdef' });
    expect(e.code).toBe('unauthorized');
    expect(e.message).toContain('M_UNKNOWN_TOKEN');
  });

  it("with someone else's token (it would make their messages count as the bot's)", async () => {
    const e = await refusal({}, { token: TOKENS[OWNER] });
    expect(e.code).toBe('wrong_user');
    expect(e.message).toContain(OWNER);
  });

  it('when the bot is only invited, not joined', async () => {
    const e = await refusal({ members: [OWNER], invited: [BOT] });
    expect(e.code).toBe('not_joined');
  });

  it('when the room does not exist', async () => {
    const e = await refusal({}, { roomId: '!missing:hs.test' });
    expect(e.code).toBe('not_joined');
  });

  it('when the approver is not in the room', async () => {
    const e = await refusal({ members: [STRANGER, BOT] });
    expect(e.code).toBe('approver_not_member');
  });

  it('when the homeserver is unreachable, with startWhileUnreachable off', async () => {
    rig = await matrixRig();
    await rig.hs.outage(true);
    const err = await rig
      .gateway({ options: { startWhileUnreachable: false } })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unreachable' });
  });

  it('when the first sync never completes (bounded wait), with startWhileUnreachable off', async () => {
    rig = await matrixRig();
    rig.hs.failRoute(/\/sync$/);
    const err = await rig
      .gateway({ options: { preparedTimeoutMs: 400, startWhileUnreachable: false } })
      .start()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'sync_timeout' });
    rig.hs.failRoute(undefined);
  });
});

describe('starting', () => {
  it('warns when people besides the bot and the approver are in the room', async () => {
    rig = await matrixRig({ members: [OWNER, BOT, STRANGER] });
    const gw = await rig.start();
    expect(gw.healthy()).toBe(true);
    expect(rig.logger.lines.some((l) => l.includes('other members') && l.includes(STRANGER))).toBe(
      true,
    );
  });

  it('a gateway that is not started, or stopped, refuses to post', async () => {
    rig = await matrixRig();
    const gw = rig.gateway();
    const request = newRequest(rig);
    await expect(gw.postRequest(request)).rejects.toMatchObject({ code: 'not_started' });
    await gw.start();
    await gw.stop();
    expect(gw.healthy()).toBe(false);
    await expect(gw.postRequest(request)).rejects.toMatchObject({ code: 'stopped' });
    await expect(gw.announce('x')).rejects.toMatchObject({ code: 'stopped' });
    await expectQuiet(rig);
  });
});

describe('starting while the homeserver is unreachable (startWhileUnreachable, the default)', () => {
  it.each([
    ['refusing connections', async (r: MatrixRig) => r.hs.outage(true, 'refuse'), 'cannot reach'],
    ['answering 502', async (r: MatrixRig) => r.hs.outage(true, '502'), 'HTTP 502'],
    ['answering 503 to whoami', (r: MatrixRig) => r.hs.failRoute(/\/whoami$/, 503), '503'],
    ['rate-limiting (429)', (r: MatrixRig) => r.hs.failRoute(/\/whoami$/, 429), 'rate-limiting'],
  ])(
    'by default start() resolves when the homeserver is %s, and connects about a second after it is back',
    async (_name, down, says) => {
      rig = await matrixRig();
      await down(rig);
      const gw = rig.gateway();
      await gw.start();
      expect(gw.healthy()).toBe(false);
      await expect(gw.postRequest(newRequest(rig))).rejects.toMatchObject({
        code: 'unhealthy',
        message: UNAVAILABLE_MESSAGE,
      });
      await rig.hs.outage(false);
      rig.hs.failRoute(undefined);
      // Default retries start at 1 s (then back off to startRetryMs, 30 s).
      await until('connected', () => gw.healthy());
      const waiting = rig.logger.lines.find((l) => l.includes('retrying in the background'));
      expect(waiting).toContain('"retry_ms":1000');
      expect(waiting).toContain(says);
      expect(rig.logger.lines.join('\n')).not.toContain(TOKENS[BOT]);
    },
  );

  it('retries back off, doubling up to startRetryMs', async () => {
    rig = await matrixRig();
    await rig.hs.outage(true);
    const gw = await rig.start({ options: { startRetryFirstMs: 50, startRetryMs: 200 } });
    await until(
      'four failed retries',
      () => (rig?.logger.lines.filter((l) => l.includes('still cannot start')).length ?? 0) >= 4,
    );
    await gw.stop();
    const delays = rig.logger.lines
      .map((l) => JSON.parse(l) as { retry_ms?: number })
      .flatMap((l) => (l.retry_ms === undefined ? [] : [l.retry_ms]));
    // The first line announces the first wait; each failed retry announces the next.
    expect(delays.slice(0, 5)).toEqual([50, 100, 200, 200, 200]);
  });

  it('start() resolves with the channel unavailable, and the gateway connects once the server is back', async () => {
    rig = await matrixRig();
    await rig.hs.outage(true);
    const gw = await rig.start({ options: { startWhileUnreachable: true, startRetryMs: 100 } });
    expect(gw.healthy()).toBe(false);
    await expect(gw.postRequest(newRequest(rig))).rejects.toMatchObject({
      code: 'unhealthy',
      message: UNAVAILABLE_MESSAGE,
    });
    expect(rig.logger.lines.some((l) => l.includes('retrying in the background'))).toBe(true);
    await rig.hs.outage(false);
    await until('connected', () => gw.healthy());
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '👍'));
    expect(rig.core.store.getRequest(request.id)?.state).toBe('approved');
  });

  it('a configuration problem still refuses to start', async () => {
    rig = await matrixRig({ room: { encrypted: true } });
    const err = await rig
      .start({ options: { startWhileUnreachable: true, startRetryMs: 100 } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'encrypted' });
  });

  it('stop() while waiting ends the retries', async () => {
    rig = await matrixRig();
    await rig.hs.outage(true);
    const gw = await rig.start({ options: { startWhileUnreachable: true, startRetryMs: 50 } });
    await gw.stop();
    await rig.hs.outage(false);
    await expectQuiet(rig);
    expect(gw.healthy()).toBe(false);
  });
});

describe('the room changes while running', () => {
  it('someone joining, or the approver leaving, is logged as a warning', async () => {
    rig = await matrixRig();
    await rig.start();
    await rig.handledOf(rig.hs.joinAs(STRANGER, ROOM));
    expect(rig.logger.lines.some((l) => l.includes('someone joined') && l.includes(STRANGER))).toBe(
      true,
    );
    await rig.handledOf(rig.hs.leaveAs(OWNER, ROOM));
    expect(rig.logger.lines.some((l) => l.includes('the approver left'))).toBe(true);
  });

  it('encryption switched on: unhealthy, posting refused', async () => {
    rig = await matrixRig();
    const gw = await rig.start();
    const ev = rig.hs.setStateAs(OWNER, ROOM, 'm.room.encryption', '', {
      algorithm: 'm.megolm.v1.aes-sha2',
    });
    await rig.handledOf(ev);
    expect(gw.healthy()).toBe(false);
    const request = newRequest(rig);
    await expect(gw.postRequest(request)).rejects.toMatchObject({ code: 'unhealthy' });
  });

  it('join rule made public: unhealthy until it is invite-only again', async () => {
    rig = await matrixRig();
    const gw = await rig.start();
    await rig.handledOf(
      rig.hs.setStateAs(OWNER, ROOM, 'm.room.join_rules', '', { join_rule: 'public' }),
    );
    expect(gw.healthy()).toBe(false);
    await rig.handledOf(
      rig.hs.setStateAs(OWNER, ROOM, 'm.room.join_rules', '', { join_rule: 'invite' }),
    );
    expect(gw.healthy()).toBe(true);
  });
});

describe('restart: no replay', () => {
  it('old commands and reactions in the timeline are not applied again; old request messages still work', async () => {
    rig = await matrixRig();
    const gw1 = await rig.start();
    const a = await rig.post(gw1, [['A', 'read']]);
    const b = await rig.post(gw1, [['B', 'read']]);
    const c = await rig.post(gw1, [['C', 'read']]);
    await rig.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${a.request.id}`));
    const thumbs = rig.hs.reactAs(OWNER, ROOM, c.messageId, '👍');
    await rig.handledOf(thumbs);
    await gw1.stop();

    // While the bot is away, the approver acts; none of it may count after the restart.
    const offline = [
      rig.hs.sayAs(OWNER, ROOM, 'revoke all'),
      rig.hs.reactAs(OWNER, ROOM, b.messageId, '👎'),
      rig.hs.sayAs(OWNER, ROOM, `approve ${b.request.id}`),
      rig.hs.redactAs(OWNER, ROOM, thumbs),
    ];
    const grantsBefore = rig.core.store.activeGrants().map((g) => g.id);
    expect(grantsBefore).toHaveLength(2);

    // A large initial window: every old event above is re-delivered by the SDK as "live".
    const gw2 = await rig.start({ options: { initialSyncLimit: 100 } });
    const probe = rig.hs.sayAs(OWNER, ROOM, 'status');
    await rig.handledOf(probe);
    for (const id of offline) expect(rig.handled.some((h) => h.eventId === id)).toBe(false);
    expect(rig.core.store.activeGrants().map((g) => g.id)).toEqual(grantsBefore);
    expect(rig.core.store.getRequest(b.request.id)?.state).toBe('pending');

    // Reactions on a request message posted before the restart still name the request.
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, a.messageId, '🛇'));
    expect(rig.core.store.activeGrants().map((g) => g.requestId)).toEqual([c.request.id]);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, b.messageId, '👍'));
    expect(rig.core.store.getRequest(b.request.id)?.state).toBe('approved');
    expect(gw2.healthy()).toBe(true);
  });
});

describe('homeserver outage', () => {
  it.each(['refuse', '502'] as const)(
    'down (%s): postRequest throws ApprovalUnavailableError and healthy() is false; back up: it reconnects and decisions work',
    async (mode) => {
      rig = await matrixRig();
      const gw = await rig.start();
      await rig.hs.outage(true, mode);
      const err = await rig.post(gw, [['A', 'read']]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApprovalUnavailableError);
      expect(err).toMatchObject({ code: 'send_failed', message: UNAVAILABLE_MESSAGE });
      expect(gw.healthy()).toBe(false);

      await rig.hs.outage(false);
      await until('reconnected', () => gw.healthy());
      const { request, messageId } = await rig.post(gw, [['B', 'read']]);
      await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '👍'));
      expect(rig.core.store.activeGrants().map((g) => g.requestId)).toEqual([request.id]);
      // Security: through failures, reconnects and the SDK's own logging, the bot's
      // access token never reaches a log line.
      expect(rig.logger.lines.length).toBeGreaterThan(10);
      expect(rig.logger.lines.join('\n')).not.toContain(TOKENS[BOT]);
    },
  );

  it('healthy() turns false by itself when sync fails, before anything is posted', async () => {
    rig = await matrixRig();
    const gw = await rig.start();
    await rig.hs.outage(true);
    await until('unhealthy', () => !gw.healthy());
    await rig.hs.outage(false);
    await until('healthy again', () => gw.healthy());
  });

  it("matrix-js-sdk's own keep-alive backoff reconnects (no nudging)", async () => {
    rig = await matrixRig();
    const gw = await rig.start({ options: { reconnectNudgeMs: undefined } });
    await rig.hs.outage(true);
    await new Promise((r) => setTimeout(r, 300));
    await rig.hs.outage(false);
    // The SDK's first keep-alive poke comes 2-7 s after the failure.
    await until('reconnected by the SDK', () => gw.healthy());
    const { request, messageId } = await rig.post(gw, [['A', 'read']]);
    await rig.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, '👍'));
    expect(rig.core.store.getRequest(request.id)?.state).toBe('approved');
  }, 20_000);

  it('a failing send alone marks the channel unhealthy until a send succeeds', async () => {
    rig = await matrixRig();
    const gw = await rig.start();
    rig.hs.failRoute(/\/send\//, 500);
    await expect(gw.announce('hello')).rejects.toMatchObject({ code: 'send_failed' });
    expect(gw.healthy()).toBe(false);
    rig.hs.failRoute(undefined);
    await gw.announce('hello again');
    expect(gw.healthy()).toBe(true);
  });

  it('a failing send stops counting after sendFailureWindowMs on the broker clock', async () => {
    rig = await matrixRig();
    const gw = await rig.start({ options: { sendFailureWindowMs: 60_000 } });
    rig.hs.failRoute(/\/send\//, 500);
    await expect(gw.announce('hello')).rejects.toMatchObject({ code: 'send_failed' });
    expect(gw.healthy()).toBe(false);
    rig.core.clock.now += 60_000;
    expect(gw.healthy()).toBe(true);
    rig.hs.failRoute(undefined);
  });
});
