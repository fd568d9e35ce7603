/**
 * The request and grant lifecycle the broker drives itself: on start, pending requests
 * are discarded (silence grants nothing, and nobody may approve a request the agent
 * made before a restart); then a periodic sweep expires pending requests older than
 * `lifecycle.pending_timeout` and grants past their expiry, tells the owner, and ends
 * what the ended grants still allow (streams, tickets, checkout locks).
 */
import type { GrantRecord, RequestRecord } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { errorDetail } from '../base/errors.js';
import { BROKER_VERSION } from '../base/version.js';
import type { AuditTrail } from './audit-trail.js';
import type { GatewayPort, GrantsPort, NoticeText, OwnerNotices } from './ports.js';

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const nodeTimers: Timers = {
  setInterval: (fn, ms) => {
    const handle = setInterval(fn, ms);
    handle.unref();
    return handle;
  },
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

export interface LifecycleDeps {
  readonly grants: GrantsPort;
  readonly gateway: GatewayPort;
  /** Words the notices (escaped and capped paths: broker/approval/format.ts). */
  readonly notices: OwnerNotices;
  readonly trail: AuditTrail;
  readonly logger: Logger;
  readonly pendingTimeoutMs: number;
  readonly onGrantsEnded: (grants: GrantRecord[], reason: 'expired') => Promise<void>;
  readonly timers: Timers;
  readonly intervalMs: number;
}

function grantSummary(g: GrantRecord): Record<string, unknown> {
  return { grant: g.id, request: g.requestId, instance: g.instance, path: g.path, mode: g.mode };
}

export class Lifecycle {
  #handle: unknown;
  #running: Promise<void> = Promise.resolve();

  constructor(private readonly deps: LifecycleDeps) {}

  /** Audits the start and discards what was pending before it. */
  async onStart(): Promise<void> {
    const { trail, grants } = this.deps;
    // Security: if the start cannot be audited, the broker must not serve (throws).
    await trail.append('start', { version: BROKER_VERSION });
    const discarded = grants.discardAllPending();
    for (const request of discarded) {
      await trail.bestEffort('discard', {
        request: request.id,
        instance: request.instance,
      });
    }
    // One notice for all of them: a restart must not flood the room.
    if (discarded.length > 0) {
      await this.announce(this.deps.notices.requestsEnded(discarded, 'discarded'));
    }
  }

  start(): void {
    if (this.#handle !== undefined) return;
    this.#handle = this.deps.timers.setInterval(() => {
      this.#running = this.#running.then(() => this.sweep());
    }, this.deps.intervalMs);
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.#handle !== undefined) this.deps.timers.clearInterval(this.#handle);
    this.#handle = undefined;
    await this.#running;
  }

  /** One pass; never throws (a failing sweep is logged and retried next time). */
  async sweep(): Promise<void> {
    try {
      const expired = this.deps.grants.expirePending(this.deps.pendingTimeoutMs);
      for (const request of expired) await this.requestExpired(request);
      const ended = this.deps.grants.expireGrants();
      if (ended.length > 0) {
        await this.deps.trail.bestEffort('expire', { grants: ended.map(grantSummary) });
        await this.deps.onGrantsEnded(ended, 'expired');
        await this.announce(this.deps.notices.grantsEnded(ended, 'expired'));
      }
    } catch (error) {
      this.deps.logger.error('lifecycle sweep failed', { error: errorDetail(error) });
    }
  }

  private async requestExpired(request: RequestRecord): Promise<void> {
    await this.deps.trail.bestEffort('expire', {
      request: request.id,
      instance: request.instance,
    });
    await this.announce(this.deps.notices.requestsEnded([request], 'expired'));
  }

  private async announce(notice: NoticeText): Promise<void> {
    try {
      await this.deps.gateway.announce(notice.plain, notice.html);
    } catch (error) {
      this.deps.logger.warn('announcement not delivered', { error: errorDetail(error) });
    }
  }
}
