/**
 * `broker reconcile` without a running daemon, and its `--admin-audit FILE` check
 * (docs/contracts.md "broker reconcile"). With the daemon stopped the command does what
 * the daemon would: it takes the audit log (its lock: no daemon can start meanwhile and
 * write operations this pass would not see), reads each account's Activity from the
 * cursor, writes its `reconcile` line and moves the cursor. The admin_audit check reads
 * the log file only, so it runs the same whether the daemon answered or not.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../base/log.js';
import type { Clock } from '../../base/domain.js';
import { AuditLog, LOG_FILE } from '../../audit/index.js';
import { readRecords } from '../../audit/records.js';
import type { BrokerConfig } from '../../config.js';
import { NextcloudClient } from '../../nextcloud/client.js';
import { AuditTrail } from '../audit-trail.js';
import { checkAdminAudit, readAdminAudit, type FileAction } from './admin-audit.js';
import { AuditFactsBuilder } from './audited.js';
import { CursorFile } from './cursor.js';
import { Reconciler } from './reconciler.js';
import { accountsOf, type ReconcileReport } from './report.js';

export interface DirectOptions {
  readonly since?: number;
  readonly now?: Clock;
  readonly logger?: Logger;
  readonly scrub: (text: string) => string;
  /** The clients' request timeout (default 30 s). */
  readonly timeoutMs?: number;
}

/** One pass of every account, the daemon stopped; rejects AuditError 'locked' if one runs. */
export async function reconcileDirect(
  config: BrokerConfig,
  options: DirectOptions,
): Promise<ReconcileReport[]> {
  const now = options.now ?? Date.now;
  const logger = options.logger ?? silentLogger;
  const audit = await AuditLog.open(config.data_dir, { now, logger });
  const clients = new Map<string, NextcloudClient>();
  try {
    for (const [name, instance] of config.instances)
      clients.set(
        name,
        new NextcloudClient(instance, { logger, now, timeoutMs: options.timeoutMs ?? 30_000 }),
      );
    const trail = new AuditTrail({ audit, scrub: options.scrub, logger });
    const reconciler = new Reconciler({
      accounts: accountsOf(config.instances.values()),
      clients,
      logFile: join(config.data_dir, LOG_FILE),
      cursors: new CursorFile(config.data_dir),
      write: (event) => trail.bestEffort(event),
      now,
      logger,
    });
    return await reconciler.passAll({
      trigger: 'command',
      ...(options.since === undefined ? {} : { since: options.since }),
    });
  } finally {
    for (const client of clients.values()) client.close();
    await audit.close();
  }
}

export interface AdminAuditReport {
  readonly file: string;
  /** The account's file actions read (at or after the start). */
  readonly actions: number;
  readonly unreadable: number;
  readonly unexplained: readonly AdminActionJson[];
  readonly pending: readonly AdminActionJson[];
}

export interface AdminActionJson {
  readonly instance: string;
  readonly time: string;
  readonly req_id: string;
  readonly method: string;
  readonly message: string;
}

/** How far before the first action the recorded ids are read (an operation's span). */
const IDS_MARGIN_MS = 3_600_000;
const TOLERANCE_MS = 2_000;

/**
 * Every file action of each account in `file` (from `since`, else all of it) whose
 * request id the broker did not record. Throws when `file` cannot be read.
 */
export async function checkAdminAuditFile(
  file: string,
  config: Pick<BrokerConfig, 'data_dir' | 'instances'>,
  since: number | undefined,
): Promise<AdminAuditReport> {
  const text = readFileSync(file, 'utf8');
  const accounts = accountsOf(config.instances.values());
  const read = accounts.map((account) => ({
    account,
    lines: readAdminAudit(text, account.user, since ?? 0),
  }));
  const times = read.flatMap((r) => r.lines.actions.map((a) => a.time));
  const facts = new AuditFactsBuilder(times.length === 0 ? 0 : Math.min(...times) - IDS_MARGIN_MS);
  await readRecords(join(config.data_dir, LOG_FILE), 0, (r, at) => facts.add(r, at));
  const unexplained: AdminActionJson[] = [];
  const pending: AdminActionJson[] = [];
  for (const { account, lines } of read) {
    const found = checkAdminAudit(lines.actions, facts.facts(), account.instances, TOLERANCE_MS);
    const json = (a: FileAction): AdminActionJson => ({
      instance: account.name,
      time: new Date(a.time).toISOString(),
      req_id: a.reqId,
      method: a.method,
      message: a.message,
    });
    unexplained.push(...found.unexplained.map(json));
    pending.push(...found.pending.map(json));
  }
  return {
    file,
    actions: read.reduce((n, r) => n + r.lines.actions.length, 0),
    // Each account reads every line; an unreadable line is counted once.
    unreadable: read[0]?.lines.unreadable ?? 0,
    unexplained,
    pending,
  };
}
