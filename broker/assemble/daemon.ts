/**
 * The assembled daemon (assemble.ts builds it): what it holds, the lifecycle sweep, and
 * its one start and one teardown.
 */
import type { BrokerServer } from '../app.js';
import type { ApprovalEngine } from '../approval/engine.js';
import type { ApprovalGateway } from '../approval/gateway.js';
import type { OwnerSocket } from '../approval/owner/server.js';
import type { AuditAnchor } from '../audit/anchor.js';
import type { AuditLog } from '../audit/index.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { BrokerConfig } from '../config.js';
import type { GrantStore } from '../grants/index.js';
import type { Operations } from '../operations/index.js';
import type { BrokerMetrics } from '../surfaces/metrics.js';
import type { Reconciler } from '../operations/reconcile/reconciler.js';
import type { StrayAnswers } from '../operations/stray-answers.js';
import type { Timers } from '../operations/timers.js';
import type { OpenParts } from './parts.js';

export interface Daemon {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly store: GrantStore;
  readonly engine: ApprovalEngine;
  readonly gateway: ApprovalGateway;
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

/** The assembled daemon, with its one start and its one teardown. */
export function runningDaemon(
  daemon: Omit<Daemon, 'start' | 'stop'>,
  anchor: AuditAnchor,
  strays: StrayAnswers,
  timers: Timers,
  open: OpenParts,
): Daemon {
  const { server, ownerSocket, gateway, operations, audit, logger, reconciler, config } = daemon;
  return {
    ...daemon,
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
        await open.close();
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
      await open.close();
    },
  };
}
