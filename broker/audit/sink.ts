import type { AuditEvent } from './events.js';

/**
 * Where events are written, declared once: `AuditLog.append` (log.ts) and what wraps it
 * (the anchor's posting, the metrics' timing, the owner's grant-use watch) answer
 * `Written` (the log's record); a reader that needs only durability takes `unknown`.
 */
export interface AuditSink<Written = unknown> {
  /** Resolves only once the line is durable; rejects when it cannot be written. */
  append(event: AuditEvent): Promise<Written>;
  /**
   * Resolves once the line is written, in its place in the chain, before its fsync
   * follows (AuditLog.appendWritten): for a line no decision waits on. A sink without
   * it is asked append() instead.
   */
  appendWritten?(event: AuditEvent): Promise<Written>;
}
