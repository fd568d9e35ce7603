/**
 * `assemble(config, options)`: builds the whole daemon from a validated configuration,
 * the one place that does (broker/main.ts, the test daemon, the benchmarks and the
 * review all call it). `assemble` is the list of its steps, in order: the secret guard
 * and the logger, the data folder and the metrics, the audit log, the grant store, one
 * Nextcloud client per instance, the operations around one pipeline, the audit anchor,
 * the approval engine and its gateway, the reconciler of Nextcloud's records, the owner
 * socket, the access requests and the lifecycle, and the HTTP server. Each part is built after everything it needs, so
 * nothing is wired late. `start()` listens; `stop()` is the one teardown.
 */
import { randomBytes } from 'node:crypto';
import { ConsoleGateway } from './approval/console.js';
import { createPairing } from './approval/pairing/index.js';
import { GrantUse } from './approval/owner/grant-use.js';
import { AuditLog, type AuditFs } from './audit/index.js';
import type { Clock } from './base/domain.js';
import { createSecretGuard } from './base/scrub.js';
import { configSecrets, type BrokerConfig } from './config.js';
import { prepareDataFolder } from './data-folder.js';
import type { NextcloudClientDeps } from './nextcloud/index.js';
import type { RefusalBudgetOptions } from './operations/refusal-budget.js';
import { nodeTimers, type Timers } from './operations/timers.js';
import { createMetrics } from './surfaces/metrics.js';
import type { AnchorTimers } from './audit/anchor.js';
import type { ApprovalEngine } from './approval/engine.js';
import type { ApprovalGateway } from './approval/gateway.js';
import {
  approvalEngine,
  auditAnchor,
  defaultGateway,
  type ConsoleTerminal,
  type GatewayParts,
} from './assemble/approval.js';
import { runningDaemon, type Daemon } from './assemble/daemon.js';
import { reconcilerOf, recordDoctorRequests, strayAnswers } from './assemble/reconciling.js';
import {
  accessRequests,
  operationsOf,
  ownerSocketOf,
  serverOf,
  sweeping,
} from './assemble/serving.js';
import { daemonLogger, nextcloudClients, OpenParts, openGrantStore } from './assemble/parts.js';

export { GRANTS_FILE } from './data-folder.js';
export type { ConsoleTerminal, GatewayParts } from './assemble/approval.js';
export type { Daemon } from './assemble/daemon.js';

export interface AssembleOptions {
  /** Receives each log line, already scrubbed (stderr in production). */
  readonly writeLog: (line: string) => void;
  /** Warnings from loading the configuration, logged first. */
  readonly configWarnings?: readonly string[];
  readonly now?: Clock;
  /** The grant database; default data_dir/grants.db (':memory:' for tests). */
  readonly grantsFile?: string;
  /** The audit log's file system (tests make it fail). */
  readonly auditFs?: AuditFs;
  /** The Nextcloud clients' request timeout (default 30 s) and capabilities cache. */
  readonly nextcloud?: Pick<NextcloudClientDeps, 'timeoutMs' | 'capabilitiesTtlMs' | 'chunkSize'>;
  /** The approval console's terminal (approval: console). */
  readonly console?: ConsoleTerminal;
  /** Another approval gateway than config.approval's (tests speak as the owner). */
  readonly gateway?: (engine: ApprovalEngine, parts: GatewayParts) => ApprovalGateway;
  readonly correlationId?: () => string;
  readonly randomBytes?: (n: number) => Buffer;
  readonly timers?: Timers;
  /** The audit anchor's interval and retry timers (tests fire them). */
  readonly anchorTimers?: AnchorTimers;
  /** How often the lifecycle sweep runs. Default 5 s. */
  readonly sweepIntervalMs?: number;
  /** How long stop() waits for in-flight requests before cutting them. Default 10 s. */
  readonly drainTimeoutMs?: number;
  /** Refused calls each surface may make (default DEFAULT_REFUSAL_BUDGET). */
  readonly refusalBudget?: RefusalBudgetOptions;
}

export async function assemble(config: BrokerConfig, options: AssembleOptions): Promise<Daemon> {
  const now = options.now ?? Date.now;
  // One list of secrets for both: what is scrubbed from every output is exactly what is
  // refused in every argument.
  const guard = createSecretGuard(
    configSecrets(config),
    [...config.instances.values()].map((i) => [i.username, i.app_password] as const),
  );
  const log = daemonLogger(config, options, guard.scrub, now);
  const { logger } = log;
  // Security: the grants, decisions and audit trail are for the broker's user alone.
  prepareDataFolder(config.data_dir, logger);
  const metrics = createMetrics([...config.instances.keys()]);
  const audit = await AuditLog.open(config.data_dir, {
    now,
    logger,
    metrics,
    ...(options.auditFs === undefined ? {} : { fs: options.auditFs }),
  });
  const open = new OpenParts(audit, logger);
  const strays = strayAnswers(audit, guard.scrub, logger, now);
  try {
    const store = open.store(openGrantStore(config, options.grantsFile, now));
    metrics.watch({
      pendingRequests: () => store.pendingRequests().length,
      activeGrants: () => store.activeGrants().length,
      heldLocks: () => store.openCheckoutLocks().length,
    });
    const clients = nextcloudClients(
      config,
      options.nextcloud,
      { logger, metrics, now, onAnswer: (name, answer) => strays.answers.add(name, answer) },
      open.clients,
    );
    const timers = options.timers ?? nodeTimers;
    const grantUse = new GrantUse(now);
    const operations = operationsOf(config, options, {
      store,
      audit: grantUse.watching(audit),
      clients,
      logger,
      scrub: guard.scrub,
      now,
      timers,
    });
    const anchor = auditAnchor(config, options.anchorTimers, audit, logger);
    const engine = approvalEngine({
      config,
      store,
      audit,
      anchor,
      metrics,
      operations,
      logger,
      now,
    });
    const parts: GatewayParts = { config, logger, audit, now };
    // The approver's pins and `broker pair`, with an encrypted room.
    const pairing = createPairing(config, {
      audit,
      now,
      logger,
      randomBytes: options.randomBytes ?? randomBytes,
      timers,
    });
    const gateway =
      options.gateway?.(engine, parts) ??
      (await defaultGateway(engine, parts, options.console, pairing));
    if (gateway instanceof ConsoleGateway) log.around((write) => gateway.aroundLog(write));
    const reconciler = reconcilerOf(config, {
      clients,
      operations,
      strays,
      gateway,
      metrics,
      now,
      logger,
    });
    const ownerSocket = ownerSocketOf(config, {
      engine,
      store,
      logger,
      now,
      grantUse,
      gateway,
      pairing,
      reconciler,
      recordRequests: recordDoctorRequests(config, strays),
    });
    const requests = accessRequests(config, { operations, store, gateway, logger, now });
    const lifecycle = sweeping(config, options.sweepIntervalMs, {
      store,
      gateway,
      operations,
      strays: strays.answers,
      logger,
      timers,
    });
    const server = serverOf(config, options, {
      operations,
      requests,
      lifecycle,
      gateway,
      logger,
      guard,
      now,
      metrics,
    });
    const daemon = { config, logger, audit, store, engine, gateway, operations, server };
    return runningDaemon(
      { ...daemon, ownerSocket, reconciler, metrics },
      anchor,
      strays.answers,
      timers,
      open,
    );
  } catch (error) {
    await open.close();
    throw error;
  }
}
