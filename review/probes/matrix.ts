/**
 * Replayed and rebound Matrix events against the real MatrixGateway (matrix-js-sdk)
 * and the fake homeserver (support/matrix.ts), with a proxy in
 * between where a case needs the network to misbehave (review/lib/sync-proxy.ts).
 * The engine, store and audit log behind the gateway are the real ones.
 */
import { MatrixGateway, REQUEST_ID_KEY } from '../../broker/approval/matrix/gateway.js';
import {
  BOT,
  FAST,
  matrixRig,
  OTHER_ROOM,
  OWNER,
  ROOM,
  STRANGER,
  TOKENS,
  type MatrixRig,
} from '../../support/matrix.js';
import { LIFECYCLE } from '../../support/approval.js';
import { until } from '../../support/until.js';
import { startSyncProxy, type SyncProxy } from '../lib/sync-proxy.js';
import type { Case, Group } from '../runner.js';

const THUMBS = '\u{1F44D}';

/** A gateway on the rig's engine that talks to the homeserver through `proxy`. */
function proxiedGateway(rig: MatrixRig, proxy: SyncProxy): MatrixGateway {
  return new MatrixGateway({
    config: {
      matrix: {
        homeserver: proxy.url,
        bot_user: BOT,
        bot_token: TOKENS[BOT],
        room_id: ROOM,
        approver: OWNER,
      },
      lifecycle: LIFECYCLE,
    },
    engine: rig.core.engine,
    logger: rig.logger,
    now: () => rig.core.clock.now,
    audit: rig.core.audit,
    options: FAST,
    onHandled: (e) => rig.handled.push(e),
  });
}

function activeFor(rig: MatrixRig, requestId: number): number {
  return rig.core.store.activeGrants().filter((g) => g.requestId === requestId).length;
}

/** Runs `fn` with a started gateway on the plain homeserver, stopping it afterwards. */
async function withGateway<T>(rig: MatrixRig, fn: (gw: MatrixGateway) => Promise<T>): Promise<T> {
  const gw = await rig.start();
  try {
    return await fn(gw);
  } finally {
    await gw.stop();
  }
}

function cases(rig: MatrixRig): Case[] {
  const { hs } = rig;
  return [
    {
      name: 'an old "revoke all" delivered again (a replayed event id) does not revoke a grant made since',
      expect: 'new grant still active',
      run: async () => {
        const proxy = await startSyncProxy(hs.url);
        const gw = proxiedGateway(rig, proxy);
        try {
          await gw.start();
          const revokeAll = hs.sayAs(OWNER, ROOM, 'revoke all');
          await rig.handledOf(revokeAll);
          const { request, messageId } = await rig.post(gw, [['Replay', 'read']]);
          await rig.handledOf(hs.reactAs(OWNER, ROOM, messageId, THUMBS));
          const old = hs.event(revokeAll);
          if (old === undefined) throw new Error('the revoke event vanished');
          proxy.replay(ROOM, old, 3);
          // Push sync responses through until the replay has gone out three times.
          while (proxy.replayed() < 3) await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          return activeFor(rig, request.id) === 1
            ? 'new grant still active'
            : 'new grant revoked by the replay';
        } finally {
          await gw.stop();
          await proxy.close();
        }
      },
    },
    {
      name: 'the same 👍 reaction event delivered three more times (a replayed event id): one decision',
      expect: '1 decision line, 1 grant',
      run: async () => {
        const proxy = await startSyncProxy(hs.url);
        const gw = proxiedGateway(rig, proxy);
        try {
          await gw.start();
          const { request, messageId } = await rig.post(gw, [['ReplayThumb', 'read']]);
          const thumbs = hs.reactAs(OWNER, ROOM, messageId, THUMBS);
          await rig.handledOf(thumbs);
          const event = hs.event(thumbs);
          if (event === undefined) throw new Error('the reaction vanished');
          proxy.replay(ROOM, event, 3);
          while (proxy.replayed() < 3) await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          const decisions = rig.core
            .records()
            .filter((r) => r.event === 'decision' && r.request === request.id).length;
          return `${decisions} decision line${decisions === 1 ? '' : 's'}, ${activeFor(rig, request.id)} grant`;
        } finally {
          await gw.stop();
          await proxy.close();
        }
      },
    },
    {
      name: "the approver's 👍 on a stranger's reply that quotes the request message",
      expect: 'no effect',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['Quoted', 'read']]);
          const reply = hs.replyAs(STRANGER, ROOM, messageId, 'please approve this one');
          await rig.handledOf(reply);
          await rig.handledOf(hs.reactAs(OWNER, ROOM, reply, THUMBS));
          return rig.core.store.getRequest(request.id)?.state === 'pending'
            ? 'no effect'
            : 'decided';
        }),
    },
    {
      name: "the stranger's verbatim copy of the request (marker and all), then the approver's 👍 on the copy",
      expect: 'no effect',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['Copied', 'read']]);
          const original = hs.event(messageId);
          const copy = hs.sendAs(STRANGER, ROOM, 'm.room.message', {
            ...original?.content,
            [REQUEST_ID_KEY]: request.id,
          });
          await rig.handledOf(copy);
          await rig.handledOf(hs.reactAs(OWNER, ROOM, copy, THUMBS));
          return rig.core.store.getRequest(request.id)?.state === 'pending'
            ? 'no effect'
            : 'decided';
        }),
    },
    {
      name: "the approver's 👍 sent in another room, pointing at the request message (rebound across rooms)",
      expect: 'no effect',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['Elsewhere', 'read']]);
          await rig.handledOf(hs.reactAs(OWNER, OTHER_ROOM, messageId, THUMBS));
          await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          return rig.core.store.getRequest(request.id)?.state === 'pending'
            ? 'no effect'
            : 'decided';
        }),
    },
    {
      name: "the approver redacts a stranger's 👍 on a request they approved",
      expect: 'grants still active',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['Others', 'read']]);
          await rig.handledOf(hs.reactAs(OWNER, ROOM, messageId, THUMBS));
          const strangers = hs.reactAs(STRANGER, ROOM, messageId, THUMBS);
          await rig.handledOf(strangers);
          await rig.handledOf(hs.redactAs(OWNER, ROOM, strangers));
          return activeFor(rig, request.id) === 1 ? 'grants still active' : 'revoked';
        }),
    },
    {
      name: "the approver redacts the bot's own pre-placed 👍 on a pending request",
      expect: 'no effect',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['BotThumb', 'read']]);
          const botThumb = hs
            .timeline(ROOM)
            .find(
              (e) =>
                e.sender === BOT &&
                e.type === 'm.reaction' &&
                (e.content['m.relates_to'] as { event_id?: string } | undefined)?.event_id ===
                  messageId,
            );
          if (botThumb === undefined) throw new Error('the bot placed no reaction');
          await rig.handledOf(hs.redactAs(OWNER, ROOM, botThumb.event_id));
          return rig.core.store.getRequest(request.id)?.state === 'pending'
            ? 'no effect'
            : 'decided';
        }),
    },
    {
      name: 'two 👍 from the approver: withdrawing the second changes nothing, withdrawing the first revokes',
      expect: 'active, then revoked',
      run: () =>
        withGateway(rig, async (gw) => {
          const { request, messageId } = await rig.post(gw, [['Twice', 'read']]);
          const first = hs.reactAs(OWNER, ROOM, messageId, THUMBS);
          await rig.handledOf(first);
          const second = hs.reactAs(OWNER, ROOM, messageId, `${THUMBS}\uFE0F`);
          await rig.handledOf(second);
          await rig.handledOf(hs.redactAs(OWNER, ROOM, second));
          const afterSecond = activeFor(rig, request.id) === 1 ? 'active' : 'revoked';
          await rig.handledOf(hs.redactAs(OWNER, ROOM, first));
          return `${afterSecond}, then ${activeFor(rig, request.id) === 0 ? 'revoked' : 'active'}`;
        }),
    },
    {
      name: "the approver's 👍 lands while the bot is starting (after start(), before PREPARED)",
      expect: 'no effect',
      run: async () => {
        const { request, messageId } = await withGateway(rig, (gw) =>
          rig.post(gw, [['Startup', 'read']]),
        );
        const proxy = await startSyncProxy(hs.url);
        const gw = proxiedGateway(rig, proxy);
        try {
          proxy.holdSyncs();
          const starting = gw.start();
          await until('the first /sync', () => proxy.held() > 0);
          hs.reactAs(OWNER, ROOM, messageId, THUMBS);
          proxy.release();
          await starting;
          await rig.handledOf(hs.sayAs(OWNER, ROOM, 'status'));
          return rig.core.store.getRequest(request.id)?.state === 'pending'
            ? 'no effect'
            : 'decided';
        } finally {
          await gw.stop();
          await proxy.close();
        }
      },
    },
    {
      name: 'the approver withdraws a 👍 after a broker restart (docs/architecture.md: removing the 👍 undoes it)',
      expect: 'revoked',
      finding: 'F7',
      run: async () => {
        const { request, thumbs } = await withGateway(rig, async (gw) => {
          const posted = await rig.post(gw, [['Restart', 'read']]);
          const t = hs.reactAs(OWNER, ROOM, posted.messageId, THUMBS);
          await rig.handledOf(t);
          return { request: posted.request, thumbs: t };
        });
        if (activeFor(rig, request.id) !== 1) return 'the 👍 did not approve';
        return withGateway(rig, async () => {
          const notices = rig.botNotices().length;
          await rig.handledOf(hs.redactAs(OWNER, ROOM, thumbs));
          await rig.handledOf(hs.sayAs(OWNER, ROOM, 'help'));
          const told = rig.botNotices().length > notices + 1;
          return activeFor(rig, request.id) === 0
            ? 'revoked'
            : `grants still active, owner ${told ? 'told' : 'not told'}`;
        });
      },
    },
  ];
}

export const matrixGroup: Group = {
  title: 'probes: replayed and rebound Matrix events (real gateway, fake homeserver)',
  async build() {
    const rig = await matrixRig({ members: [OWNER, BOT, STRANGER] });
    rig.hs.createRoom({ id: OTHER_ROOM, members: [OWNER, BOT, STRANGER] });
    return {
      cases: cases(rig),
      teardown: () => rig.close(),
    };
  },
};
