/**
 * Withdrawing the approving 👍 after a broker restart (review F7, docs/architecture.md): the grant
 * database and audit log are files, closed and reopened between two "processes" (new
 * store, engine and gateway), against the same fake homeserver room.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  STORE_ID_KEY,
  type HandledEvent,
} from '../../broker/approval/matrix/gateway.js';
import { AuditLog } from '../../broker/audit/index.js';
import { GrantStore } from '../../broker/grants/index.js';
import { memoryLogger } from '../../broker/base/log.js';
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
import { LIFECYCLE, T0 } from '../../support/approval.js';
import { until } from '../../support/until.js';

const THUMBS = '👍';

interface Broker {
  store: GrantStore;
  audit: AuditLog;
  gw: MatrixGateway;
  handled: HandledEvent[];
  handledOf(eventId: string): Promise<HandledEvent>;
  stop(): Promise<void>;
}

let rig: MatrixRig;
let dir: string;
let running: Broker | undefined;
const clock = { now: T0 };

beforeEach(async () => {
  rig = await matrixRig({ members: [OWNER, BOT, STRANGER] });
  rig.hs.createRoom({ id: OTHER_ROOM, members: [OWNER, BOT, STRANGER] });
  dir = mkdtempSync(join(tmpdir(), 'matrix-restart-'));
  clock.now = T0;
});
afterEach(async () => {
  await running?.stop();
  running = undefined;
  await rig.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One broker "process": files opened from `dir`, a fresh engine and gateway. */
async function boot(): Promise<Broker> {
  const now = (): number => clock.now;
  const audit = await AuditLog.open(dir, { now });
  const store = GrantStore.open(join(dir, 'grants.db'), {
    now,
    pendingTimeoutMs: LIFECYCLE.pending_timeout,
  });
  const engine = new ApprovalEngine({
    store,
    audit,
    now,
    lifecycle: LIFECYCLE,
    instances: new Set(['personal']),
  });
  const handled: HandledEvent[] = [];
  const gw = new MatrixGateway({
    config: {
      matrix: {
        homeserver: rig.hs.url,
        bot_user: BOT,
        bot_token: TOKENS[BOT],
        room_id: ROOM,
        approver: OWNER,
      },
      lifecycle: LIFECYCLE,
    },
    engine,
    logger: memoryLogger(),
    now,
    audit,
    options: FAST,
    onHandled: (e) => handled.push(e),
  });
  await gw.start();
  let stopped = false;
  const broker: Broker = {
    store,
    audit,
    gw,
    handled,
    handledOf: async (eventId) => {
      await until(`event ${eventId} handled`, () => handled.some((h) => h.eventId === eventId));
      const found = handled.find((h) => h.eventId === eventId);
      if (found === undefined) throw new Error('unreachable');
      return found;
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await gw.stop();
      store.close();
      await audit.close();
    },
  };
  running = broker;
  return broker;
}

async function restart(b: Broker): Promise<Broker> {
  await b.stop();
  return boot();
}

/** The owner deletes data/grants.db (and its WAL files) while the broker is down. */
async function restartWithNewDatabase(b: Broker): Promise<Broker> {
  await b.stop();
  for (const f of ['grants.db', 'grants.db-wal', 'grants.db-shm'])
    rmSync(join(dir, f), { force: true });
  return boot();
}

/** A pending request posted to the room; returns its number and the message's event id. */
async function posted(b: Broker, path: string) {
  const request = b.store.createRequest({
    instance: 'personal',
    reason: 'summarise',
    items: [{ path, mode: 'read' }],
  });
  await b.gw.postRequest(request);
  const message = rig.hs
    .timeline(ROOM)
    .filter((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === request.id)
    .at(-1);
  if (message === undefined) throw new Error('request not posted');
  return { id: request.id, messageId: message.event_id, content: message.content };
}

/** A request approved by the approver's 👍 in the first process. */
async function approvedByThumbs(b: Broker, path = 'Reports') {
  const request = b.store.createRequest({
    instance: 'personal',
    reason: 'summarise',
    items: [{ path, mode: 'read' }],
  });
  await b.gw.postRequest(request);
  const message = rig.hs
    .timeline(ROOM)
    .filter((e) => e.sender === BOT && e.type === 'm.room.message')
    .at(-1);
  if (message === undefined) throw new Error('request not posted');
  const thumbs = rig.hs.reactAs(OWNER, ROOM, message.event_id, THUMBS);
  await b.handledOf(thumbs);
  expect(b.store.activeGrants().map((g) => g.requestId)).toContain(request.id);
  return { id: request.id, messageId: message.event_id, thumbs };
}

const activeFor = (b: Broker, id: number) =>
  b.store.activeGrants().filter((g) => g.requestId === id);

describe('withdrawing the approving 👍 after a restart (docs/architecture.md)', () => {
  it('revokes what it granted, says so in the room, and audits it as approval_withdrawn', async () => {
    const first = await boot();
    const { id, thumbs } = await approvedByThumbs(first);
    const second = await restart(first);
    const notices = rig.botNotices().length;

    clock.now += 60_000;
    const handled = await second.handledOf(rig.hs.redactAs(OWNER, ROOM, thumbs));
    expect(handled.kind).toBe('redaction');
    expect(activeFor(second, id)).toEqual([]);
    expect(second.store.grant(handled.reply?.revoked?.[0]?.id ?? -1)).toMatchObject({
      state: 'revoked',
      endedAt: clock.now,
    });
    const told = rig.botNotices().slice(notices);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`Approval of request ${id} withdrawn: revoked 1 grant`);
    await second.stop();
    const lines = readFileSync(join(dir, 'audit.log'), 'utf8');
    const revokes = lines
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r['event'] === 'revoke');
    expect(revokes).toEqual([
      expect.objectContaining({
        actor: OWNER,
        cause: 'approval_withdrawn',
        target: { request: id },
        outcome: 'revoked',
      }),
    ]);
  });

  it('the link survives more than one restart, and one 👍 undoes at most once', async () => {
    const first = await boot();
    const a = await approvedByThumbs(first, 'A');
    const second = await restart(first);
    const third = await restart(second);
    await third.handledOf(rig.hs.redactAs(OWNER, ROOM, a.thumbs));
    expect(activeFor(third, a.id)).toEqual([]);
    const notices = rig.botNotices().length;
    // Matrix lets a redaction be sent again; the second one finds the link used up.
    const again = await third.handledOf(rig.hs.redactAs(OWNER, ROOM, a.thumbs));
    expect(again.kind).toBe('unknown_target');
    const fourth = await restart(third);
    const thrice = await fourth.handledOf(rig.hs.redactAs(OWNER, ROOM, a.thumbs));
    expect(thrice.kind).toBe('unknown_target');
    expect(rig.botNotices()).toHaveLength(notices);
  });

  it('withdrawing one 👍 revokes only the request it approved', async () => {
    const first = await boot();
    const a = await approvedByThumbs(first, 'A');
    const b = await approvedByThumbs(first, 'B');
    const second = await restart(first);
    await second.handledOf(rig.hs.redactAs(OWNER, ROOM, b.thumbs));
    expect(second.store.activeGrants().map((g) => g.requestId)).toEqual([a.id]);
  });

  it('a 👍 that granted nothing (request decided by a typed command first) undoes nothing after a restart', async () => {
    const first = await boot();
    const request = first.store.createRequest({
      instance: 'personal',
      reason: 'x',
      items: [{ path: 'Typed', mode: 'read' }],
    });
    await first.gw.postRequest(request);
    const message = rig.hs
      .timeline(ROOM)
      .filter((e) => e.sender === BOT && e.type === 'm.room.message')
      .at(-1);
    await first.handledOf(rig.hs.sayAs(OWNER, ROOM, `approve ${request.id}`));
    const thumbs = rig.hs.reactAs(OWNER, ROOM, message?.event_id ?? '', THUMBS);
    expect((await first.handledOf(thumbs)).reply?.text).toContain('already decided');
    const second = await restart(first);
    const handled = await second.handledOf(rig.hs.redactAs(OWNER, ROOM, thumbs));
    expect(handled.kind).toBe('unknown_target');
    expect(activeFor(second, request.id)).toHaveLength(1);
  });
});

describe("attack: undoing the approver's 👍 without being the approver, after a restart", () => {
  it("a stranger (say a room moderator) redacting the approver's 👍 revokes nothing, and does not use up the undo", async () => {
    const first = await boot();
    const { id, thumbs } = await approvedByThumbs(first);
    const second = await restart(first);
    const notices = rig.botNotices().length;
    expect((await second.handledOf(rig.hs.redactAs(STRANGER, ROOM, thumbs))).kind).toBe('stranger');
    expect(activeFor(second, id)).toHaveLength(1);
    expect(rig.botNotices()).toHaveLength(notices);
    // The approver's own withdrawal still works afterwards.
    await second.handledOf(rig.hs.redactAs(OWNER, ROOM, thumbs));
    expect(activeFor(second, id)).toEqual([]);
  });

  it("the approver's redaction naming the 👍 from another room does nothing", async () => {
    const first = await boot();
    const { id, thumbs } = await approvedByThumbs(first);
    const second = await restart(first);
    const elsewhere = rig.hs.redactAs(OWNER, OTHER_ROOM, thumbs);
    // Events in other rooms are ignored; push one event through the room to be sure.
    await second.handledOf(rig.hs.sayAs(OWNER, ROOM, 'status'));
    expect(second.handled.find((h) => h.eventId === elsewhere)?.kind ?? 'ignore').toBe('ignore');
    expect(activeFor(second, id)).toHaveLength(1);
  });

  it("the approver withdrawing a stranger's 👍 on the request revokes nothing", async () => {
    const first = await boot();
    const { id, messageId } = await approvedByThumbs(first);
    const strangers = rig.hs.reactAs(STRANGER, ROOM, messageId, THUMBS);
    await first.handledOf(strangers);
    const second = await restart(first);
    const handled = await second.handledOf(rig.hs.redactAs(OWNER, ROOM, strangers));
    expect(handled.kind).toBe('unknown_target');
    expect(activeFor(second, id)).toHaveLength(1);
  });
});

describe('a 👍 on a request message posted before a normal restart (same database)', () => {
  it('approves that request: the message names this database', async () => {
    const first = await boot();
    const { id, messageId, content } = await posted(first, 'Reports');
    expect(content[STORE_ID_KEY]).toBe(first.store.storeId);
    const second = await restart(first);
    const handled = await second.handledOf(rig.hs.reactAs(OWNER, ROOM, messageId, THUMBS));
    expect(handled.kind).toBe('reaction');
    expect(second.store.getRequest(id)?.state).toBe('approved');
    expect(activeFor(second, id)).toHaveLength(1);
  });
});

describe('attack: a 👍 on a request message from a previous grant database', () => {
  it('does not approve the new request with the same number; it stays pending', async () => {
    const first = await boot();
    const old = await posted(first, 'Old/Harmless');
    const second = await restartWithNewDatabase(first);
    const fresh = await posted(second, 'Private/Taxes');
    expect(fresh.id).toBe(old.id);
    expect(second.store.storeId).not.toBe(first.store.storeId);
    const notices = rig.botNotices().length;

    const handled = await second.handledOf(rig.hs.reactAs(OWNER, ROOM, old.messageId, THUMBS));
    expect(handled.kind).toBe('unknown_target');
    expect(second.store.getRequest(fresh.id)?.state).toBe('pending');
    expect(second.store.activeGrants()).toEqual([]);
    expect(rig.botNotices()).toHaveLength(notices);
    // The new request's own message still works.
    await second.handledOf(rig.hs.reactAs(OWNER, ROOM, fresh.messageId, THUMBS));
    expect(second.store.getRequest(fresh.id)?.state).toBe('approved');
  });

  it('a 👎 on the old message does not deny the new request either', async () => {
    const first = await boot();
    const old = await posted(first, 'Old');
    const second = await restartWithNewDatabase(first);
    const fresh = await posted(second, 'New');
    const handled = await second.handledOf(rig.hs.reactAs(OWNER, ROOM, old.messageId, '👎'));
    expect(handled.kind).toBe('unknown_target');
    expect(second.store.getRequest(fresh.id)?.state).toBe('pending');
  });

  it('a request message without the store key (posted by an older broker) is not trusted', async () => {
    const first = await boot();
    const { id, content } = await posted(first, 'Reports');
    const second = await restart(first);
    // The bot's own message, as a broker before the store key would have posted it.
    const legacy = rig.hs.sendAs(BOT, ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: content['body'],
      [REQUEST_ID_KEY]: id,
    });
    const handled = await second.handledOf(rig.hs.reactAs(OWNER, ROOM, legacy, THUMBS));
    expect(handled.kind).toBe('unknown_target');
    expect(second.store.getRequest(id)?.state).toBe('pending');
  });
});
