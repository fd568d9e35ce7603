/**
 * `assemble(config, options)`: builds the whole daemon from a validated configuration,
 * the one place that does (broker/main.ts, the test daemon, the benchmarks and the
 * review all call it). It opens the audit log and the grant store, makes one Nextcloud
 * client per instance, the operations around one pipeline, the approval engine and its
 * gateway, and the HTTP server, in that order: each part is built after everything it
 * needs, so nothing is wired late. `start()` listens; `stop()` is the one teardown.
 */
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { createServer, type ApprovalGatewayPort, type BrokerServer } from './app.js';
import { ConsoleGateway } from './approval/console.js';
import { ApprovalEngine } from './approval/engine.js';
import { CLEAR_TEXT_NOTICE } from './approval/views.js';
import { GrantUse } from './approval/owner/grant-use.js';
import { OWNER_SOCKET_FILE } from './approval/owner/protocol.js';
import { OwnerSocket } from './approval/owner/server.js';
import { renderGrantsEnded, renderRequestsEnded } from './approval/format.js';
import { AuditAnchor, type AnchorTimers } from './audit/anchor.js';
import { AuditLog, LOG_FILE, type AuditFs } from './audit/index.js';
import type { Clock } from './base/domain.js';
import { errorDetail } from './base/errors.js';
import { createLogger, type Logger } from './base/log.js';
import { createSecretGuard } from './base/scrub.js';
import { configSecrets, type BrokerConfig } from './config.js';
import { GRANTS_FILE, prepareDataFolder } from './data-folder.js';
import { GrantStore } from './grants/index.js';
import { NextcloudClient, type NextcloudClientDeps } from './nextcloud/index.js';
import { createOperations, type Operations } from './operations/index.js';
import { Lifecycle } from './operations/lifecycle.js';
import { createMetrics, timingDecisions, type BrokerMetrics } from './surfaces/metrics.js';
import { AccessRequests } from './operations/requests.js';
import type { RefusalBudgetOptions } from './operations/refusal-budget.js';
import { nodeTimers, type Timers } from './operations/timers.js';
import { AuditTrail } from './operations/audit-trail.js';
import { StrayAnswers } from './operations/stray-answers.js';
import { CursorFile } from './operations/reconcile/cursor.js';
import { Reconciler } from './operations/reconcile/reconciler.js';
import { accountsOf } from './operations/reconcile/report.js';
import { renderUnexplained } from './approval/reconcile-notice.js';

export { GRANTS_FILE } from './data-folder.js';

/** What a gateway factory gets besides the engine. */
export interface GatewayParts {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly now: Clock;
}

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
  readonly gateway?: (engine: ApprovalEngine, parts: GatewayParts) => ApprovalGatewayPort;
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

/** Where the approval console runs (approval: console). */
export interface ConsoleTerminal {
  readonly input: Readable;
  readonly output: Writable;
  /** Both are a terminal (default true); if not, the console runs headless. */
  readonly interactive?: boolean;
  /** `quit`, or Ctrl-D on a terminal: the owner asks the broker to stop. */
  readonly onQuit?: (why: string) => void;
}

export interface Daemon {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly store: GrantStore;
  readonly engine: ApprovalEngine;
  readonly gateway: ApprovalGatewayPort;
  readonly operations: Operations;
  readonly server: BrokerServer;
  /** The owner socket (`broker approve N` and the other owner commands). */
  readonly ownerSocket: OwnerSocket;
  /** Nextcloud's Activity compared with the audit log (on reconcile.interval, and on request). */
  readonly reconciler: Reconciler;
  /** This daemon's own metrics registry (served on GET /metrics with tokens.metrics). */
  readonly metrics: BrokerMetrics;
  /** Starts the gateway, audits `start`, listens. On failure everything is closed again. */
  start(): Promise<{ url: string; host: string; port: number }>;
  /** Stops accepting, drains, stops the gateway, audits `stop`, closes the log and the store. */
  stop(): Promise<void>;
}

async function defaultGateway(
  engine: ApprovalEngine,
  { config, logger, audit, now }: GatewayParts,
  terminal: AssembleOptions['console'],
): Promise<ApprovalGatewayPort> {
  if (config.approval === 'console') {
    if (terminal === undefined) throw new Error('approval: console needs a terminal');
    return new ConsoleGateway({
      input: terminal.input,
      output: terminal.output,
      engine,
      now,
      lifecycle: config.lifecycle,
      logger,
      ownerSocket: join(config.data_dir, OWNER_SOCKET_FILE),
      ...(terminal.interactive === undefined ? {} : { interactive: terminal.interactive }),
      ...(terminal.onQuit === undefined ? {} : { onQuit: terminal.onQuit }),
    });
  }
  // Loaded only when used: matrix-js-sdk is a third of the idle memory.
  const { MatrixGateway } = await import('./approval/matrix/gateway.js');
  return new MatrixGateway({ config, engine, logger, now, audit, dataDir: config.data_dir });
}

export async function assemble(config: BrokerConfig, options: AssembleOptions): Promise<Daemon> {
  const now = options.now ?? Date.now;
  // One list of secrets for both: what is scrubbed from every output is exactly what is
  // refused in every argument.
  const guard = createSecretGuard(
    configSecrets(config),
    [...config.instances.values()].map((i) => [i.username, i.app_password] as const),
  );
  const { scrub } = guard;
  // A log line waits for the console to clear its prompt (set once the console exists).
  let aroundLog = (write: () => void): void => write();
  const writeLog = (line: string): void => aroundLog(() => options.writeLog(line));
  const logger = createLogger({ level: config.logging.level, scrub, write: writeLog, now });
  for (const warning of options.configWarnings ?? []) logger.warn('config', { warning });
  // Security: the grants, decisions and audit trail are for the broker's user alone.
  prepareDataFolder(config.data_dir, logger);
  const metrics = createMetrics([...config.instances.keys()]);
  const audit = await AuditLog.open(config.data_dir, {
    now,
    logger,
    metrics,
    ...(options.auditFs === undefined ? {} : { fs: options.auditFs }),
  });
  let store: GrantStore | undefined;
  const clients = new Map<string, NextcloudClient>();
  const closeParts = async (): Promise<void> => {
    for (const client of clients.values()) client.close();
    try {
      await audit.close();
    } catch (error) {
      logger.warn('audit log close failed', { error: errorDetail(error) });
    }
    store?.close();
  };
  try {
    store = GrantStore.open(options.grantsFile ?? join(config.data_dir, GRANTS_FILE), {
      now,
      pendingTimeoutMs: config.lifecycle.pending_timeout,
    });
    const grants = store;
    // Security: every answer of Nextcloud that no operation's outcome records (a late
    // one, a request outside every operation) is written in batches: none looks foreign.
    const strayTrail = new AuditTrail({ audit, scrub, logger });
    const strays = new StrayAnswers({ write: (event) => strayTrail.bestEffort(event), now });
    metrics.watch({
      pendingRequests: () => grants.pendingRequests().length,
      activeGrants: () => grants.activeGrants().length,
      heldLocks: () => grants.openCheckoutLocks().length,
    });
    for (const [name, instance] of config.instances) {
      clients.set(
        name,
        new NextcloudClient(instance, {
          logger,
          now,
          timeoutMs: 30_000,
          metrics,
          onAnswer: (answer) => strays.add(name, answer),
          ...(config.transfer.chunk_size === undefined
            ? {}
            : { chunkSize: config.transfer.chunk_size }),
          ...(config.transfer.put_limit === undefined
            ? {}
            : { putLimit: config.transfer.put_limit }),
          ...options.nextcloud,
        }),
      );
    }
    const timers = options.timers ?? nodeTimers;
    const grantUse = new GrantUse(now);
    const operations = createOperations({
      grants: store,
      checkoutLocks: store.checkoutLocks,
      audit: grantUse.watching(audit),
      instances: config.instances,
      clients,
      logger,
      scrub,
      now,
      timers,
      ...(options.correlationId ? { correlationId: options.correlationId } : {}),
      ...(options.randomBytes ? { randomBytes: options.randomBytes } : {}),
      ...(options.refusalBudget ? { refusalBudget: options.refusalBudget } : {}),
    });
    // The head goes to the room after each owner decision and on the interval.
    const anchor = new AuditAnchor({
      head: () => audit.head,
      intervalMs: config.audit.anchor_interval,
      logger,
      ...(options.anchorTimers === undefined ? {} : { timers: options.anchorTimers }),
    });
    const engine = new ApprovalEngine({
      config,
      store,
      audit: timingDecisions(anchor.postingAfter(audit), (id) => grants.getRequest(id), metrics),
      batch: (command) => anchor.batch(command),
      now,
      logger,
      onRevoked: (grants) => operations.endGrants(grants, 'revoked'),
      channel: config.approval,
      // Security: in a clear-text room every `status` reminds the owner that a decision
      // there proves only that the homeserver passed an event on as the approver's.
      ...(config.approval === 'matrix' && (config.matrix?.encryption ?? 'off') === 'off'
        ? { statusNotice: CLEAR_TEXT_NOTICE }
        : {}),
    });
    const parts: GatewayParts = { config, logger, audit, now };
    const gateway =
      options.gateway?.(engine, parts) ?? (await defaultGateway(engine, parts, options.console));
    if (gateway instanceof ConsoleGateway) aroundLog = (write) => gateway.aroundLog(write);
    const reconciler = new Reconciler({
      accounts: accountsOf(config.instances.values()),
      clients,
      logFile: join(config.data_dir, LOG_FILE),
      cursors: new CursorFile(config.data_dir),
      write: (event) => operations.trail.bestEffort(event),
      quiet: (instance, answer) => strays.add(instance, answer, true),
      tell: async (report) => {
        const notice = renderUnexplained(report);
        await gateway.announce(notice.plain, notice.html);
      },
      counted: (instance, count) => metrics.reconcileUnexplained(instance, count),
      now,
      logger,
    });
    const ownerSocket = new OwnerSocket({
      dir: config.data_dir,
      engine,
      store,
      now,
      pendingTimeout: config.lifecycle.pending_timeout,
      logger,
      lastUsed: (id) => grantUse.lastUsed(id),
      recordRequests: async (instance, ids) =>
        config.instances.has(instance) &&
        (await strayTrail.bestEffort({
          event: 'nc_requests',
          instance,
          source: 'doctor',
          nc_request_ids: [...ids],
        })),
      reconcile: (since, instance) =>
        reconciler.passAll(
          { trigger: 'command', ...(since === undefined ? {} : { since }) },
          instance,
        ),
    });
    const requests = new AccessRequests({
      pipeline: operations.pipeline,
      trail: operations.trail,
      refusals: operations.refusals,
      grants: store,
      gateway,
      instances: config.instances,
      maxPending: config.lifecycle.max_pending,
      logger,
      now,
    });
    const lifecycle = new Lifecycle({
      grants: store,
      gateway,
      notices: { grantsEnded: renderGrantsEnded, requestsEnded: renderRequestsEnded },
      trail: operations.trail,
      logger,
      pendingTimeoutMs: config.lifecycle.pending_timeout,
      onGrantsEnded: (grants, reason) => operations.endGrants(grants, reason),
      releaseLocks: () => operations.releaseDueLocks(),
      summarise: async () => {
        await operations.refusals.flushDue();
        await strays.flushDue();
      },
      timers,
      intervalMs: options.sweepIntervalMs ?? 5_000,
    });
    const server = createServer({
      config,
      operations,
      requests,
      lifecycle,
      gateway,
      logger,
      scrub,
      holdsSecret: guard.holds,
      now,
      metrics,
      ...(options.correlationId ? { correlationId: options.correlationId } : {}),
      ...(options.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: options.drainTimeoutMs }),
    });
    const openStore = store;
    return {
      config,
      logger,
      audit,
      store: openStore,
      engine,
      gateway,
      operations,
      server,
      ownerSocket,
      reconciler,
      metrics,
      async start() {
        try {
          const listening = await server.start();
          await ownerSocket.start();
          anchor.start((line) => gateway.announce(line));
          const { interval } = config.reconcile;
          if (interval !== 'off') reconciler.start(interval, timers);
          return listening;
        } catch (error) {
          await ownerSocket.stop();
          await server.close();
          await closeParts();
          throw error;
        }
      },
      async stop() {
        anchor.stop();
        await ownerSocket.stop();
        await reconciler.stop();
        await server.close();
        // Security: the counted refusals and the held request ids are written before the
        // log closes, so none is unrecorded at a clean stop.
        await operations.refusals.flushAll();
        await strays.flushAll();
        try {
          await audit.append({ event: 'stop' });
        } catch (error) {
          logger.error('could not audit the stop', { error: errorDetail(error) });
        }
        await closeParts();
      },
    };
  } catch (error) {
    await closeParts();
    throw error;
  }
}
