/**
 * When each grant was last relied on, for `broker grants` ("used last"): every
 * operation writes an `intent` audit record naming the grants it relies on before it
 * touches Nextcloud, so watching those appends is enough. Kept in memory: after a
 * restart a grant shows as unused until its next operation.
 */
import type { Clock } from '../../base/domain.js';
import type { AuditSink } from '../../audit/sink.js';

export class GrantUse {
  readonly #last = new Map<number, number>();

  readonly #now: Clock;

  constructor(now: Clock) {
    this.#now = now;
  }

  /** The instant grant `id` was last relied on, if it was since the start. */
  lastUsed(id: number): number | undefined {
    return this.#last.get(id);
  }

  /** An audit log whose `intent` appends also note the grants they name. */
  watching<T>(audit: AuditSink<T>): AuditSink<T> {
    return {
      append: async (event) => {
        const written = await audit.append(event);
        if (event.event === 'intent' && Array.isArray(event.grants)) {
          const at = this.#now();
          for (const id of event.grants) if (typeof id === 'number') this.#last.set(id, at);
        }
        return written;
      },
      // An intent is never written this way (log.ts): nothing to note.
      appendWritten: (event) => (audit.appendWritten ?? audit.append).call(audit, event),
    };
  }
}
