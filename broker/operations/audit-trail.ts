/**
 * The audit log as the operations write to it: every string of every line is scrubbed
 * of the configured secrets first (an agent can plant a token in a path or a reason).
 */
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { scrubDeep } from '../base/scrub.js';
import type { AuditEvent } from '../audit/events.js';
import type { AuditSink } from '../audit/sink.js';

// What an outcome line records of Nextcloud's answers, written with the trail.
export { OutcomeAnswers } from './outcome-answers.js';

export interface AuditTrailDeps {
  readonly audit: AuditSink;
  readonly scrub: (text: string) => string;
  readonly logger: Logger;
}

export class AuditTrail {
  readonly #deps: AuditTrailDeps;

  constructor(deps: AuditTrailDeps) {
    this.#deps = deps;
  }

  /** Appends a line (strings scrubbed); rejects when it is not durable. */
  async append(event: AuditEvent): Promise<void> {
    await this.#deps.audit.append(scrubDeep(event, this.#deps.scrub));
  }

  /**
   * Appends a line whose failure must not change the answer; logs the failure.
   * `written`: resolves once the line is written, before its fsync (AuditSink.appendWritten).
   */
  async bestEffort(
    event: AuditEvent,
    durability: 'durable' | 'written' = 'durable',
  ): Promise<boolean> {
    const { audit, scrub } = this.#deps;
    try {
      const line = scrubDeep(event, scrub);
      if (durability === 'written' && audit.appendWritten !== undefined)
        await audit.appendWritten(line);
      else await audit.append(line);
      return true;
    } catch (error) {
      this.#deps.logger.error('audit append failed', {
        event: event.event,
        error: errorDetail(error),
      });
      return false;
    }
  }
}
