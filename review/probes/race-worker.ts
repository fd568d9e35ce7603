/**
 * One racer of the cross-connection probe (review/probes/races.ts), run in a worker
 * thread: its own GrantStore connection to the shared SQLite file, its own AuditLog and
 * ApprovalEngine, so SQLite's locking is the only thing keeping racers apart. All
 * racers wait on a shared barrier, then send their commands as fast as they can.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import { AuditLog } from '../../broker/audit/index.js';
import { GrantStore } from '../../broker/grants/index.js';

export interface RacerInput {
  readonly file: string;
  readonly role: 'approver' | 'denier' | 'revoker';
  readonly ids: readonly number[];
  readonly barrier: SharedArrayBuffer;
  readonly racers: number;
}

export interface RacerReply {
  readonly command: string;
  readonly text: string;
  /** ms since the epoch, read just before the command was sent. */
  readonly sentAt: number;
}

const H = 3_600_000;
const input = workerData as RacerInput;

function commandsFor(role: RacerInput['role'], ids: readonly number[]): string[] {
  if (role === 'approver') return ids.map((id) => `approve ${id}`);
  // From the other end, so the two deciders meet (and collide) somewhere in the middle.
  if (role === 'denier') return [...ids].reverse().map((id) => `deny ${id}`);
  // The revoker revokes each request and, half way through, everything.
  const half = Math.floor(ids.length / 2);
  return [
    ...ids.slice(0, half).map((id) => `revoke ${id}`),
    'revoke all',
    ...ids.slice(half).map((id) => `revoke ${id}`),
  ];
}

const dir = mkdtempSync(join(tmpdir(), `review-racer-${input.role}-`));
const store = GrantStore.open(input.file, {
  now: Date.now,
  pendingTimeoutMs: 12 * H,
  busyTimeoutMs: 20_000,
});
const audit = await AuditLog.open(dir, { now: Date.now });
const engine = new ApprovalEngine({
  store,
  audit,
  now: Date.now,
  lifecycle: { pending_timeout: 12 * H, default_grant: 24 * H, max_grant: 7 * 24 * H },
  instances: new Set(['personal']),
});

// Barrier: everyone arrives, then everyone goes.
const counter = new Int32Array(input.barrier);
Atomics.add(counter, 0, 1);
Atomics.notify(counter, 0);
while (Atomics.load(counter, 0) < input.racers)
  Atomics.wait(counter, 0, Atomics.load(counter, 0), 50);

const replies: RacerReply[] = [];
for (const command of commandsFor(input.role, input.ids)) {
  const sentAt = Date.now();
  const reply = await engine.handleText(command, `@${input.role}:hs.test`);
  replies.push({ command, text: reply?.text ?? '(ignored)', sentAt });
}
await audit.close();
store.close();
rmSync(dir, { recursive: true, force: true });
parentPort?.postMessage(replies);
