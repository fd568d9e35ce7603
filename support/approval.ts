/**
 * A real GrantStore (SQLite in memory) and a real AuditLog (temp dir) around an
 * ApprovalEngine, with a clock the test moves. The audit file system can be told to
 * fail writes, which is how "the audit log is down" is produced without mocks.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLog, type AuditRecord } from '../broker/audit/index.js';
import { GrantStore } from '../broker/grants/index.js';
import type { LifecyclePolicy } from '../broker/approval/ports.js';
import { ApprovalEngine, type ApprovalEngineDeps } from '../broker/approval/engine.js';
import type { GrantRecord, Mode } from '../broker/base/domain.js';
import { memoryLogger } from '../broker/base/log.js';
import { faultyAuditFs } from './audit-fs.js';

export const S = 1_000;
export const M = 60 * S;
export const H = 60 * M;
export const D = 24 * H;
export const T0 = Date.UTC(2025, 0, 2, 12, 0, 0);

export const LIFECYCLE: LifecyclePolicy = {
  pending_timeout: 12 * H,
  default_grant: 24 * H,
  max_grant: 7 * D,
};

export interface Harness {
  engine: ApprovalEngine;
  store: GrantStore;
  audit: AuditLog;
  clock: { now: number };
  dir: string;
  revokedCalls: GrantRecord[][];
  logger: ReturnType<typeof memoryLogger>;
  failAudit(on: boolean): void;
  /** Every audit record written so far, parsed. */
  records(): AuditRecord[];
  request(items: [string, Mode][], instance?: string, reason?: string): number;
  close(): Promise<void>;
}

export async function harness(
  opts: {
    onRevokedFails?: boolean;
    instances?: string[];
    channel?: 'matrix' | 'console';
    /** The Matrix room is encrypted (help offers the poll and pairing). */
    encrypted?: boolean;
    lifecycle?: Partial<LifecyclePolicy>;
    /** What `undo` runs (the daemon's is operations/undo/); without it undo is refused. */
    undo?: ApprovalEngineDeps['undo'];
  } = {},
): Promise<Harness> {
  const clock = { now: T0 };
  const now = (): number => clock.now;
  const dir = mkdtempSync(join(tmpdir(), 'approval-test-'));
  const faulty = faultyAuditFs();
  const audit = await AuditLog.open(dir, { now, fs: faulty.fs });
  const store = GrantStore.open(':memory:', { now, pendingTimeoutMs: LIFECYCLE.pending_timeout });
  const revokedCalls: GrantRecord[][] = [];
  const logger = memoryLogger();
  const engine = new ApprovalEngine({
    store,
    audit,
    now,
    lifecycle: { ...LIFECYCLE, ...opts.lifecycle },
    instances: new Set(opts.instances ?? ['personal', 'work']),
    ...(opts.channel === undefined ? {} : { channel: opts.channel }),
    ...(opts.encrypted === undefined ? {} : { encrypted: opts.encrypted }),
    ...(opts.undo === undefined ? {} : { undo: opts.undo }),
    logger,
    onRevoked: async (grants) => {
      revokedCalls.push(grants);
      if (opts.onRevokedFails === true) throw new Error('unlock failed');
    },
  });
  return {
    engine,
    store,
    audit,
    clock,
    dir,
    revokedCalls,
    logger,
    failAudit: faulty.failWrites,
    records: () =>
      readFileSync(join(dir, 'audit.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as AuditRecord),
    request: (items, instance = 'personal', reason = 'sort the receipts') =>
      store.createRequest({
        instance,
        reason,
        items: items.map(([path, mode]) => ({ path, mode })),
      }).id,
    close: async () => {
      store.close();
      await audit.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
