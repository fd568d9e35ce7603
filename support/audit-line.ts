/**
 * An audit line for tests of the log's mechanics (the chain, group commit, failures,
 * recovery): any event name with any fields, whatever the event's schema asks. The
 * broker's own writers hand `AuditLog.append` an `AuditEvent` checked at compile time
 * (broker/audit/events.ts); these tests exercise the bytes, not the vocabulary.
 */
import type { AuditEvent, AuditEventName } from '../broker/audit/events.js';

export function appendLine<T>(
  log: { append(event: AuditEvent): Promise<T> },
  event: AuditEventName,
  fields: Record<string, unknown> = {},
): Promise<T> {
  return log.append({ event, ...fields } as AuditEvent);
}
