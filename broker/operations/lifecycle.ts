/**
 * The request and grant lifecycle the broker drives itself: on start, pending requests
 * are discarded (silence grants nothing, and nobody may approve a request the agent
 * made before a restart); then a periodic sweep, whose first pass runs at once, expires
 * pending requests older than `lifecycle.pending_timeout` and grants past their expiry,
 * tells the owner, ends what the ended grants still allow (streams, tickets, checkout
 * locks), and retries every checkout lock release that is due — so a lock whose grant
 * ended while the broker was down is released right after the start. Each pass also
 * writes the summaries of repeated refusals whose window has closed.
 */
import type { GrantRecord, RequestRecord } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { errorDetail } from '../base/errors.js';
import { BROKER_VERSION } from '../base/version.js';
import type { AuditTrail } from './audit-trail.js';
import type { GatewayPort, GrantsPort, NoticeText, OwnerNotices } from './ports.js';
import type { Timers } from './timers.js';

export interface LifecycleDeps {
  readonly grants: GrantsPort;
  readonly gateway: GatewayPort;
  /** Words the notices (escaped and capped paths: broker/approval/format.ts). */
  readonly notices: OwnerNotices;
  readonly trail: AuditTrail;
  readonly logger: Logger;
  readonly pendingTimeoutMs: number;
  readonly onGrantsEnded: (grants: GrantRecord[], reason: 'expired') => Promise<void>;
  /** One attempt at every checkout lock release that is due. */
  readonly releaseLocks: () => Promise<void>;
  /** Writes the counted refusals whose window has closed (refusal-ledger.ts). */
  readonly summarise?: () => Promise<void>;
  readonly timers: Pick<Timers, 'setInterval' | 'clearInterval'>;
  readonly intervalMs: number;
}

/** A grant as an `expire` line names it. */
function grantSummary(
  g: GrantRecord,
): Pick<GrantRecord, 'instance' | 'path' | 'mode'> & { grant: number; request: number } {
  return { grant: g.id, request: g.requestId, instance: g.instance, path: g.path, mode: g.mode };
}

export class Lifecycle {
  #handle: unknown;
  #running: Promise<void> = Promise.resolve();

  readonly #deps: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.#deps = deps;
  }

  /** Audits the start and discards what was pending before it. */
  async onStart(): Promise<void> {
    const { trail, grants } = this.#deps;
    // Security: if the start cannot be audited, the broker must not serve (throws).
    await trail.append({ event: 'start', version: BROKER_VERSION });
    const discarded = grants.discardAllPending();
    for (const request of discarded) {
      await trail.bestEffort({ event: 'discard', request: request.id, instance: request.instance });
    }
    // One notice for all of them: a restart must not flood the room.
    if (discarded.length > 0) {
      await this.#announce(this.#deps.notices.requestsEnded(discarded, 'discarded'));
    }
  }

  /** Starts the timer, and a first pass at once (locks whose grants ended while down). */
  start(): void {
    if (this.#handle !== undefined) return;
    void this.sweep();
    this.#handle = this.#deps.timers.setInterval(() => void this.sweep(), this.#deps.intervalMs);
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.#handle !== undefined) this.#deps.timers.clearInterval(this.#handle);
    this.#handle = undefined;
    await this.#running;
  }

  /** One pass after any pass in progress; never throws (a failure is retried next time). */
  sweep(): Promise<void> {
    this.#running = this.#running.then(() => this.#pass());
    return this.#running;
  }

  async #pass(): Promise<void> {
    try {
      const expired = this.#deps.grants.expirePending(this.#deps.pendingTimeoutMs);
      for (const request of expired) await this.#requestExpired(request);
      const ended = this.#deps.grants.expireGrants();
      if (ended.length > 0) {
        await this.#deps.trail.bestEffort({ event: 'expire', grants: ended.map(grantSummary) });
        await this.#deps.onGrantsEnded(ended, 'expired');
        await this.#announce(this.#deps.notices.grantsEnded(ended, 'expired'));
      }
      await this.#deps.releaseLocks();
      await this.#deps.summarise?.();
    } catch (error) {
      this.#deps.logger.error('lifecycle sweep failed', { error: errorDetail(error) });
    }
  }

  async #requestExpired(request: RequestRecord): Promise<void> {
    await this.#deps.trail.bestEffort({
      event: 'expire',
      request: request.id,
      instance: request.instance,
    });
    await this.#announce(this.#deps.notices.requestsEnded([request], 'expired'));
  }

  async #announce(notice: NoticeText): Promise<void> {
    try {
      await this.#deps.gateway.announce(notice.plain, notice.html);
    } catch (error) {
      this.#deps.logger.warn('announcement not delivered', { error: errorDetail(error) });
    }
  }
}
