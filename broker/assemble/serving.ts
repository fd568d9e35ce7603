/**
 * What serves the agent and the owner (assemble.ts builds it in order): the operations
 * around one pipeline, the access requests, the lifecycle sweep, the owner socket and
 * the HTTP server.
 */
import { createServer, type BrokerServer } from '../app.js';
import type { ApprovalEngine } from '../approval/engine.js';
import type { ApprovalGateway } from '../approval/gateway.js';
import { renderGrantsEnded, renderRequestsEnded } from '../approval/format.js';
import type { GrantUse } from '../approval/owner/grant-use.js';
import { OwnerSocket } from '../approval/owner/server.js';
import type { Pairing } from '../approval/pairing/index.js';
import type { AuditSink } from '../audit/sink.js';
import { readHistory } from '../audit/history.js';
import type { Clock } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import type { SecretGuard } from '../base/scrub.js';
import type { BrokerConfig } from '../config.js';
import type { GrantStore } from '../grants/index.js';
import type { NextcloudClient } from '../nextcloud/index.js';
import { createOperations, type Operations } from '../operations/index.js';
import { Lifecycle } from '../operations/lifecycle.js';
import type { RefusalBudgetOptions } from '../operations/refusal-budget.js';
import type { Reconciler } from '../operations/reconcile/reconciler.js';
import { AccessRequests } from '../operations/requests.js';
import type { StrayAnswers } from '../operations/stray-answers.js';
import type { Timers } from '../operations/timers.js';
import type { BrokerMetrics } from '../surfaces/metrics.js';

/** The operations around one pipeline, over the store, the audit and the clients. */
export function operationsOf(
  config: BrokerConfig,
  options: {
    readonly correlationId?: (() => string) | undefined;
    readonly randomBytes?: ((n: number) => Buffer) | undefined;
    readonly refusalBudget?: RefusalBudgetOptions | undefined;
  },
  parts: {
    store: GrantStore;
    audit: AuditSink;
    clients: ReadonlyMap<string, NextcloudClient>;
    logger: Logger;
    scrub: (text: string) => string;
    now: Clock;
    timers: Timers;
  },
): Operations {
  const { store } = parts;
  return createOperations({
    grants: store,
    checkoutLocks: store.checkoutLocks,
    audit: parts.audit,
    instances: config.instances,
    clients: parts.clients,
    logger: parts.logger,
    scrub: parts.scrub,
    now: parts.now,
    timers: parts.timers,
    // Undo reads what happened back from the log this daemon writes.
    history: (onRecord) => readHistory(config.data_dir, onRecord),
    ...(options.correlationId ? { correlationId: options.correlationId } : {}),
    ...(options.randomBytes ? { randomBytes: options.randomBytes } : {}),
    ...(options.refusalBudget ? { refusalBudget: options.refusalBudget } : {}),
  });
}

/** request_access and check_access: stored, audited, posted to the gateway. */
export function accessRequests(
  config: BrokerConfig,
  parts: {
    operations: Operations;
    store: GrantStore;
    gateway: ApprovalGateway;
    logger: Logger;
    now: Clock;
  },
): AccessRequests {
  const { operations } = parts;
  return new AccessRequests({
    pipeline: operations.pipeline,
    trail: operations.trail,
    refusals: operations.refusals,
    grants: parts.store,
    gateway: parts.gateway,
    instances: config.instances,
    maxPending: config.lifecycle.max_pending,
    logger: parts.logger,
    now: parts.now,
  });
}

/** The owner socket (`broker approve N` and the other owner commands). */
export function ownerSocketOf(
  config: BrokerConfig,
  parts: {
    engine: ApprovalEngine;
    store: GrantStore;
    logger: Logger;
    now: Clock;
    grantUse: GrantUse;
    gateway: ApprovalGateway;
    pairing: Pairing | undefined;
    reconciler: Reconciler;
    recordRequests: (instance: string, ids: readonly string[]) => Promise<boolean>;
  },
): OwnerSocket {
  const { grantUse, gateway, pairing, reconciler } = parts;
  return new OwnerSocket({
    dir: config.data_dir,
    engine: parts.engine,
    store: parts.store,
    now: parts.now,
    pendingTimeout: config.lifecycle.pending_timeout,
    logger: parts.logger,
    lastUsed: (id) => grantUse.lastUsed(id),
    // Security: a decision made in a shell is shown where the owner watches.
    show: (text, html) => gateway.announce(text, html),
    pins: pairing?.pins,
    pairing: pairing?.desk,
    recordRequests: parts.recordRequests,
    reconcile: (since, instance) =>
      reconciler.passAll(
        { trigger: 'command', ...(since === undefined ? {} : { since }) },
        instance,
      ),
  });
}

/** The lifecycle sweep: expiries, lock releases, refusal summaries, on an interval. */
export function sweeping(
  config: BrokerConfig,
  intervalMs: number | undefined,
  parts: {
    store: GrantStore;
    gateway: ApprovalGateway;
    operations: Operations;
    strays: StrayAnswers;
    logger: Logger;
    timers: Timers;
  },
): Lifecycle {
  const { operations, strays } = parts;
  return new Lifecycle({
    grants: parts.store,
    gateway: parts.gateway,
    notices: { grantsEnded: renderGrantsEnded, requestsEnded: renderRequestsEnded },
    trail: operations.trail,
    logger: parts.logger,
    pendingTimeoutMs: config.lifecycle.pending_timeout,
    onGrantsEnded: (grants, reason) => operations.endGrants(grants, reason),
    releaseLocks: () => operations.releaseDueLocks(),
    summarise: async () => {
      await operations.refusals.flushDue();
      await strays.flushDue();
    },
    timers: parts.timers,
    intervalMs: intervalMs ?? 5_000,
  });
}

/** The HTTP server over the operations, the requests and the lifecycle. */
export function serverOf(
  config: BrokerConfig,
  options: {
    readonly correlationId?: (() => string) | undefined;
    readonly drainTimeoutMs?: number | undefined;
  },
  parts: {
    operations: Operations;
    requests: AccessRequests;
    lifecycle: Lifecycle;
    gateway: ApprovalGateway;
    logger: Logger;
    guard: SecretGuard;
    now: Clock;
    metrics: BrokerMetrics;
  },
): BrokerServer {
  const { guard } = parts;
  return createServer({
    config,
    operations: parts.operations,
    requests: parts.requests,
    lifecycle: parts.lifecycle,
    gateway: parts.gateway,
    logger: parts.logger,
    scrub: guard.scrub,
    holdsSecret: guard.holds,
    now: parts.now,
    metrics: parts.metrics,
    ...(options.correlationId ? { correlationId: options.correlationId } : {}),
    ...(options.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: options.drainTimeoutMs }),
  });
}
