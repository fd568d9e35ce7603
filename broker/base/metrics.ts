/**
 * What the broker's parts report for `GET /metrics` (docs/contracts.md, "Metrics"): a
 * port every layer may call, with no metrics library behind it here. The Prometheus
 * registry that implements it is surfaces/metrics.ts; without one, NO_METRICS drops
 * everything.
 *
 * Security: every argument that becomes a label is from a closed set the code fixes (a
 * tool name, an envelope status or code, an HTTP method and status, a direction, a
 * configured instance name); no caller passes a path, a file name, a reason or a secret,
 * and the implementation maps anything outside its sets to `other`.
 */
import type { SurfaceName } from './call.js';
import type { Envelope } from './envelope.js';

export type TransferDirection = 'upload' | 'download';

export interface MetricsPort {
  /** A tool call (or blob GET/PUT) answered with this envelope. */
  answered(surface: SurfaceName, tool: string, envelope: Pick<Envelope, 'status' | 'code'>): void;
  /** An audit append, from the call until its line was fsynced. */
  auditAppended(seconds: number): void;
  /** One write+fsync of the audit log (a group-commit batch). */
  auditSynced(seconds: number): void;
  /** Bytes of a file that went through the blob endpoint, whole and verified. */
  bytesMoved(direction: TransferDirection, bytes: number): void;
  /** A Nextcloud request, until its answer's head arrived (`error`: none arrived). */
  nextcloudRequest(
    instance: string,
    method: string,
    status: number | 'error',
    seconds: number,
  ): void;
  /** The owner decided a request this long after the agent asked. */
  decided(outcome: 'approved' | 'denied', seconds: number): void;
  /** Reconciliation found changes of the instance's account the broker did not make. */
  reconcileUnexplained(instance: string, count: number): void;
}

export const NO_METRICS: MetricsPort = {
  answered: () => undefined,
  auditAppended: () => undefined,
  auditSynced: () => undefined,
  bytesMoved: () => undefined,
  nextcloudRequest: () => undefined,
  decided: () => undefined,
  reconcileUnexplained: () => undefined,
};

/** Seconds since `started` (a performance.now() reading): what every duration metric takes. */
export function secondsSince(started: number): number {
  return (performance.now() - started) / 1000;
}
