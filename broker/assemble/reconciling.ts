/**
 * Nextcloud's own records against the audit log (assemble.ts builds them in order): the
 * answers no operation's outcome records, written in batches, and the reconciler that
 * compares each account's Activity with the log.
 */
import { join } from 'node:path';
import { renderUnexplained } from '../approval/reconcile-notice.js';
import type { ApprovalGateway } from '../approval/gateway.js';
import { LOG_FILE, type AuditLog } from '../audit/index.js';
import type { Clock } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import type { BrokerConfig } from '../config.js';
import type { NextcloudClient } from '../nextcloud/index.js';
import { AuditTrail } from '../operations/audit-trail.js';
import type { Operations } from '../operations/index.js';
import { CursorFile } from '../operations/reconcile/cursor.js';
import { Reconciler } from '../operations/reconcile/reconciler.js';
import { accountsOf } from '../operations/reconcile/report.js';
import { StrayAnswers } from '../operations/stray-answers.js';
import type { BrokerMetrics } from '../surfaces/metrics.js';

/** Nextcloud's answers outside every operation's outcome, and where they are written. */
export interface Strays {
  readonly answers: StrayAnswers;
  readonly trail: AuditTrail;
}

/**
 * Security: every answer of Nextcloud that no operation's outcome records (a late one, a
 * request outside every operation) is written in batches: none looks foreign.
 */
export function strayAnswers(
  audit: AuditLog,
  scrub: (text: string) => string,
  logger: Logger,
  now: Clock,
): Strays {
  const trail = new AuditTrail({ audit, scrub, logger });
  return { trail, answers: new StrayAnswers({ write: (event) => trail.bestEffort(event), now }) };
}

/** The reconciler of every configured account; the owner is told what it cannot explain. */
export function reconcilerOf(
  config: BrokerConfig,
  parts: {
    clients: ReadonlyMap<string, NextcloudClient>;
    operations: Operations;
    strays: Strays;
    gateway: ApprovalGateway;
    metrics: BrokerMetrics;
    now: Clock;
    logger: Logger;
  },
): Reconciler {
  const { operations, strays, gateway, metrics } = parts;
  return new Reconciler({
    accounts: accountsOf(config.instances.values()),
    clients: parts.clients,
    logFile: join(config.data_dir, LOG_FILE),
    cursors: new CursorFile(config.data_dir),
    write: (event) => operations.trail.bestEffort(event),
    quiet: (instance, answer) => strays.answers.add(instance, answer, true),
    tell: async (report) => {
      const notice = renderUnexplained(report);
      await gateway.announce(notice.plain, notice.html);
    },
    counted: (instance, count) => metrics.reconcileUnexplained(instance, count),
    now: parts.now,
    logger: parts.logger,
  });
}

/** `broker doctor`'s request ids, recorded when they name a configured instance. */
export function recordDoctorRequests(
  config: BrokerConfig,
  strays: Strays,
): (instance: string, ids: readonly string[]) => Promise<boolean> {
  return async (instance, ids) =>
    config.instances.has(instance) &&
    (await strays.trail.bestEffort({
      event: 'nc_requests',
      instance,
      source: 'doctor',
      nc_request_ids: [...ids],
    }));
}
