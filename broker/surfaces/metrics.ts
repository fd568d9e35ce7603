/**
 * The broker's Prometheus metrics (docs/contracts.md, "Metrics"): one prom-client
 * Registry per daemon, never the library's global one, so two brokers in one process
 * (the tests) count apart. It implements the MetricsPort the other parts report to; the
 * gauges are read from the grant store when scraped.
 *
 * Security: labels come only from closed sets. Each label value is checked against its
 * set here and anything else becomes `other`, so even a caller's mistake cannot put a
 * path, a file name, a reason or a secret into the output.
 */
import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AuditSink } from '../audit/sink.js';
import type { SurfaceName } from '../base/call.js';
import type { RequestRecord } from '../base/domain.js';
import { STATUSES } from '../base/envelope.js';
import type { MetricsPort, TransferDirection } from '../base/metrics.js';

/** What the gauges read when scraped. */
export interface MetricsGauges {
  readonly pendingRequests: () => number;
  readonly activeGrants: () => number;
  readonly heldLocks: () => number;
}

export interface BrokerMetrics extends MetricsPort {
  readonly registry: Registry;
  /** Starts reading the gauges from the store (once it is open). */
  watch(gauges: MetricsGauges): void;
}

const OTHER = 'other';
/** Tool names and envelope codes are snake_case identifiers the code defines. */
const IDENTIFIER = /^[a-z][a-z_]{0,47}$/;
const METHODS = new Set([
  'GET',
  'HEAD',
  'PUT',
  'POST',
  'DELETE',
  'MKCOL',
  'MOVE',
  'COPY',
  'PROPFIND',
  'PROPPATCH',
  'REPORT',
  'SEARCH',
  'LOCK',
  'UNLOCK',
]);
const SURFACES: readonly SurfaceName[] = ['agent', 'transfer'];

const oneOf = (value: string, allowed: ReadonlySet<string> | readonly string[]): string =>
  new Set<string>(allowed).has(value) ? value : OTHER;
const identifier = (value: string | undefined): string =>
  value !== undefined && IDENTIFIER.test(value) ? value : OTHER;
const httpStatus = (status: number | 'error'): string =>
  status !== 'error' && Number.isInteger(status) && status >= 100 && status <= 599
    ? String(status)
    : 'error';

/** Seconds: fast local work (audit) to slow remote work (Nextcloud, the owner). */
const LOCAL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
const REMOTE_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const APPROVAL_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600];

/**
 * `instances`: the configured instance names (config keys, chosen by the owner, fixed at
 * start), the one label set that is not the code's own; see docs/contracts.md.
 */
export function createMetrics(instances: readonly string[]): BrokerMetrics {
  const registry = new Registry();
  const registers = [registry];
  const known = new Set(instances);
  const requests = new Counter({
    name: 'broker_requests_total',
    help: 'Tool calls and blob transfers answered, by surface, tool and envelope status.',
    labelNames: ['surface', 'tool', 'status'] as const,
    registers,
  });
  const refusals = new Counter({
    name: 'broker_refusals_total',
    help: 'Calls answered refused (or cut by the refusal budget), by surface and code.',
    labelNames: ['surface', 'code'] as const,
    registers,
  });
  const auditAppend = new Histogram({
    name: 'broker_audit_append_seconds',
    help: 'Audit appends, from the call until the line is fsynced.',
    buckets: LOCAL_BUCKETS,
    registers,
  });
  const auditSync = new Histogram({
    name: 'broker_audit_fsync_seconds',
    help: 'Audit log writes with their fsync (one per group-commit batch).',
    buckets: LOCAL_BUCKETS,
    registers,
  });
  const bytes = new Counter({
    name: 'broker_transfer_bytes_total',
    help: 'Bytes of whole, verified files through the blob endpoint, by direction.',
    labelNames: ['direction'] as const,
    registers,
  });
  const nextcloud = new Histogram({
    name: 'broker_nextcloud_request_seconds',
    help: 'Nextcloud requests until the answer head arrived, by instance, method and status.',
    labelNames: ['instance', 'method', 'status'] as const,
    buckets: REMOTE_BUCKETS,
    registers,
  });
  const approval = new Histogram({
    name: 'broker_approval_seconds',
    help: 'Time from an access request to the owner decision, by outcome.',
    labelNames: ['outcome'] as const,
    buckets: APPROVAL_BUCKETS,
    registers,
  });
  const unexplained = new Counter({
    name: 'broker_reconcile_unexplained_total',
    help: 'Changes in Nextcloud made with the account of the instance that the broker did not make, each counted once (a --since look back counts nothing).',
    labelNames: ['instance'] as const,
    registers,
  });
  let gauges: MetricsGauges | undefined;
  const gauge = (name: string, help: string, read: (g: MetricsGauges) => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(gauges === undefined ? 0 : read(gauges));
      },
    });
  };
  gauge('broker_pending_requests', 'Access requests waiting for the owner.', (g) =>
    g.pendingRequests(),
  );
  gauge('broker_active_grants', 'Grants in force now.', (g) => g.activeGrants());
  gauge('broker_held_locks', 'Checkout locks not yet confirmed released.', (g) => g.heldLocks());

  return {
    registry,
    watch(source) {
      gauges = source;
    },
    answered(surface, tool, envelope) {
      const s = oneOf(surface, SURFACES);
      requests.inc({
        surface: s,
        tool: identifier(tool),
        status: oneOf(envelope.status, STATUSES),
      });
      if (envelope.status === 'refused' || envelope.code === 'rate_limited') {
        refusals.inc({ surface: s, code: identifier(envelope.code) });
      }
    },
    auditAppended: (seconds) => auditAppend.observe(seconds),
    auditSynced: (seconds) => auditSync.observe(seconds),
    bytesMoved(direction: TransferDirection, n: number) {
      bytes.inc({ direction: oneOf(direction, ['upload', 'download']) }, n);
    },
    nextcloudRequest(instance, method, status, seconds) {
      nextcloud.observe(
        {
          instance: oneOf(instance, known),
          method: oneOf(method.toUpperCase(), METHODS),
          status: httpStatus(status),
        },
        seconds,
      );
    },
    decided(outcome, seconds) {
      approval.observe({ outcome: oneOf(outcome, ['approved', 'denied']) }, seconds);
    },
    reconcileUnexplained(instance, count) {
      unexplained.inc({ instance: oneOf(instance, known) }, count);
    },
  };
}

/** `GET /metrics`: the registry in the Prometheus text format (behind its token, app.ts). */
export function metricsHandler(registry: Registry): RequestHandler {
  return (_req, res, next) => {
    registry.metrics().then(
      (text) => {
        res.status(200).set('Content-Type', registry.contentType).set('Cache-Control', 'no-store');
        res.send(text);
      },
      (error: unknown) => next(error),
    );
  };
}

/**
 * The approval engine's audit, timing each owner decision once it is recorded: the
 * `decision` record names the request, whose creation and decision times are in the
 * store. Only recorded decisions count (an approval the audit could not take is undone).
 */
export function timingDecisions<T>(
  audit: AuditSink<T>,
  getRequest: (id: number) => RequestRecord | undefined,
  metrics: MetricsPort,
): AuditSink<T> {
  return {
    async append(event) {
      const record = await audit.append(event);
      const request = event.event === 'decision' ? getRequest(event.request) : undefined;
      if (request !== undefined && request.decidedAt !== null) {
        metrics.decided(
          request.state === 'denied' ? 'denied' : 'approved',
          Math.max(0, request.decidedAt - request.createdAt) / 1000,
        );
      }
      return record;
    },
  };
}
