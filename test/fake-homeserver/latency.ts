/**
 * Approval latency through the whole Matrix path, for bench/approval.bench.ts:
 * the approver's 👍 reaction is sent to the homeserver → the bot's long-poll sync
 * delivers it → the gateway resolves the request message → the engine decides →
 * the grant is active in the store. Measured against the fake homeserver on loopback,
 * with the real GrantStore (SQLite, in memory), AuditLog (fsync, temp dir) and engine.
 *
 * Baseline, measured in the same run: a plain chat line from the approver until the
 * gateway has handled it (sync delivery + classification, no decision). The
 * difference is what deciding costs (store transaction + audit fsync).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ApprovalStore } from '../../broker/approval/ports.js';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import {
  MatrixGateway,
  REQUEST_ID_KEY,
  type HandledEvent,
} from '../../broker/approval/matrix/gateway.js';
import { AuditLog } from '../../broker/audit/index.js';
import { GrantStore } from '../../broker/grants/index.js';
import type { Logger } from '../../broker/base/log.js';
import { startFakeHomeserver } from '../../fakes/homeserver.js';
import { BOT, FAST, OWNER, ROOM, TOKENS } from '../../support/matrix.js';

export interface ApprovalLatency {
  /** ms from sending 👍 to the grant being active, one per sample. */
  approvalMs: number[];
  /** ms from sending a chat line to the gateway having handled it, one per sample. */
  deliveryMs: number[];
}

const LIFECYCLE = {
  pending_timeout: 12 * 3_600_000,
  default_grant: 86_400_000,
  max_grant: 7 * 86_400_000,
};
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export async function measureApprovalLatency(
  opts: { samples?: number } = {},
): Promise<ApprovalLatency> {
  const samples = opts.samples ?? 50;
  const dir = mkdtempSync(join(tmpdir(), 'approval-latency-'));
  const now = Date.now;
  const audit = await AuditLog.open(dir, { now });
  const store = GrantStore.open(':memory:', { now, pendingTimeoutMs: LIFECYCLE.pending_timeout });
  // The grant is active the moment the store's decide() commits; wait on exactly that.
  const grantedWaiters = new Map<number, () => void>();
  const timedStore: ApprovalStore = {
    getRequest: (id) => store.getRequest(id),
    decide: (id, d) => {
      const r = store.decide(id, d);
      if (r.ok && r.granted.length > 0) grantedWaiters.get(id)?.();
      return r;
    },
    activeGrants: () => store.activeGrants(),
    revokeRequest: (id) => store.revokeRequest(id),
    revokeInstance: (name) => store.revokeInstance(name),
    revokeAll: () => store.revokeAll(),
    revokeGrants: (ids) => store.revokeGrants(ids),
    pendingRequests: () => store.pendingRequests(),
  };
  const engine = new ApprovalEngine({
    store: timedStore,
    audit,
    now,
    lifecycle: LIFECYCLE,
    instances: new Set(['personal']),
  });
  const hs = await startFakeHomeserver({ users: TOKENS });
  hs.createRoom({ id: ROOM, members: [OWNER, BOT] });
  const handledWaiters = new Map<string, () => void>();
  const gateway = new MatrixGateway({
    config: {
      matrix: {
        homeserver: hs.url,
        bot_user: BOT,
        bot_token: TOKENS[BOT],
        room_id: ROOM,
        approver: OWNER,
      },
      lifecycle: LIFECYCLE,
    },
    engine,
    logger: silent,
    now,
    options: { ...FAST, pollTimeoutMs: 30_000 },
    onHandled: (e: HandledEvent) => handledWaiters.get(e.eventId)?.(),
  });
  const result: ApprovalLatency = { approvalMs: [], deliveryMs: [] };
  try {
    await gateway.start();
    for (let i = 0; i < samples; i += 1) {
      const request = store.createRequest({
        instance: 'personal',
        reason: 'latency sample',
        items: [{ path: `bench/${i}`, mode: 'read' }],
      });
      await gateway.postRequest(request);
      const message = hs
        .timeline(ROOM)
        .find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === request.id);
      if (!message) throw new Error(`request ${request.id} was not posted`);

      const granted = new Promise<void>((resolve) => grantedWaiters.set(request.id, resolve));
      const t0 = performance.now();
      hs.reactAs(OWNER, ROOM, message.event_id, '👍');
      await granted;
      result.approvalMs.push(performance.now() - t0);
      grantedWaiters.delete(request.id);

      // Let the bot's confirmation go out before the baseline sample.
      await new Promise((r) => setTimeout(r, 20));
      const t1 = performance.now();
      // sayAs only appends; the gateway cannot handle it before the waiter is set.
      const chatId = hs.sayAs(OWNER, ROOM, `thanks ${i}`);
      await new Promise<void>((resolve) => handledWaiters.set(chatId, resolve));
      result.deliveryMs.push(performance.now() - t1);
      handledWaiters.clear();
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await gateway.stop();
    await hs.close();
    store.close();
    await audit.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}
