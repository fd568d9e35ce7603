/**
 * Posts the audit log's durable head to the approval room, `audit anchor SEQ:HASH`
 * (docs/contracts.md §4): after every record of an owner decision, and at least every
 * `audit.anchor_interval` while records were added. The room is outside the broker's
 * host, so `broker audit verify --anchor SEQ:HASH` catches a history rewritten on the
 * host, checkpoint included.
 *
 * Best effort: a post never blocks or fails an operation or a decision. One that fails
 * is logged once per outage, retried with back-off (each retry posts the head of that
 * moment), and the recovery is logged. At most one post is in flight; requests that
 * arrive meanwhile are folded into one more post of the newest head.
 */
import { errorLine } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { anchorLine, anchorText } from './anchor-text.js';
import type { ChainHead } from './chain.js';
import type { AuditEvent } from './events.js';
import type { AuditSink } from './sink.js';

/** One-shot timers, injectable so tests fire the interval and the retries themselves. */
export interface AnchorTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const nodeAnchorTimers: AnchorTimers = {
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Sends one line to the owner (the approval gateway's `announce`). */
export type AnchorPost = (line: string) => Promise<void>;

export interface AuditAnchorDeps {
  /** The audit log's durable head. */
  head: () => ChainHead;
  /** `audit.anchor_interval`. */
  intervalMs: number;
  logger: Logger;
  timers?: AnchorTimers;
  /** First wait before posting again after a failure; doubles up to intervalMs. Default 30 s. */
  retryMs?: number;
}

/** False for an owner command's record that changed no grant and no request. */
function changedSomething(event: AuditEvent): boolean {
  if ('outcome' in event && event.outcome === 'refused') return false;
  const grants = 'grants' in event ? event.grants : undefined;
  return !(event.event === 'revoke' && Array.isArray(grants) && grants.length === 0);
}

export class AuditAnchor {
  readonly #timers: AnchorTimers;
  readonly #firstRetryMs: number;
  #post: AnchorPost | undefined;
  /** The newest head the room has (or the head at start: nothing to post before it). */
  #posted: ChainHead | undefined;
  #baseline = 0;
  #inFlight = false;
  #again = false;
  #soon = false;
  /** Owner commands running (see `batch`), and whether one of them asked for a post. */
  #holding = 0;
  #held = false;
  /** Failed attempts in a row (0: the last one reached the room). */
  #failures = 0;
  #retryDelayMs: number;
  #intervalTimer: unknown;
  #retryTimer: unknown;

  readonly #deps: AuditAnchorDeps;

  constructor(deps: AuditAnchorDeps) {
    this.#deps = deps;
    this.#timers = deps.timers ?? nodeAnchorTimers;
    this.#firstRetryMs = Math.min(deps.retryMs ?? 30_000, deps.intervalMs);
    this.#retryDelayMs = this.#firstRetryMs;
  }

  /** Starts posting through `post`; records up to the current head count as posted. */
  start(post: AnchorPost): void {
    this.#post = post;
    this.#baseline = this.#deps.head().seq;
    this.#armInterval();
  }

  /** Stops the timers; a post in flight finishes unlogged. */
  stop(): void {
    this.#post = undefined;
    this.#timers.clearTimeout(this.#intervalTimer);
    this.#timers.clearTimeout(this.#retryTimer);
    this.#intervalTimer = this.#retryTimer = undefined;
  }

  /**
   * An audit log whose appends also post the head once each is durable: what the
   * approval engine writes to, so every owner decision that changed something is
   * followed by an anchor. A refused command, or a revoke that ended nothing, is
   * audited too but posts nothing: an anchor after every typo is noise in the room;
   * its record is anchored with the next change or on the interval.
   */
  postingAfter<T>(audit: AuditSink<T>): AuditSink<T> {
    return {
      append: async (event) => {
        const record = await audit.append(event);
        if (changedSomething(event)) this.decided();
        return record;
      },
    };
  }

  /**
   * Posts the head soon (after the current turn, so the decision's own answer goes
   * first). Never throws.
   */
  decided(): void {
    if (this.#holding > 0) {
      this.#held = true;
      return;
    }
    if (this.#soon) return;
    this.#soon = true;
    setImmediate(() => {
      this.#soon = false;
      this.#request();
    });
  }

  /**
   * Runs one owner command: whatever records it writes (`deny all` writes one per
   * request) are followed by a single post of the head once it is done, not one each,
   * so a batch decision does not flood the owner's room.
   */
  async batch<T>(task: () => Promise<T>): Promise<T> {
    this.#holding += 1;
    try {
      return await task();
    } finally {
      this.#holding -= 1;
      if (this.#holding === 0 && this.#held) {
        this.#held = false;
        this.decided();
      }
    }
  }

  #armInterval(): void {
    this.#intervalTimer = this.#timers.setTimeout(() => {
      if (this.#post === undefined) return;
      this.#request();
      this.#armInterval();
    }, this.#deps.intervalMs);
  }

  /** True when records were added since the last head the room has. */
  #behind(): boolean {
    return this.#deps.head().seq > (this.#posted?.seq ?? this.#baseline);
  }

  #request(): void {
    if (this.#post === undefined || !this.#behind()) return;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    void this.#attempt();
  }

  async #attempt(): Promise<void> {
    const post = this.#post;
    if (post === undefined) return;
    this.#inFlight = true;
    const head = this.#deps.head();
    try {
      await post(anchorLine(head));
      this.#posted = head;
      this.#succeeded(head);
    } catch (err) {
      this.#failed(head, err);
    } finally {
      this.#inFlight = false;
    }
    if (this.#again) {
      this.#again = false;
      this.#request();
    }
  }

  #succeeded(head: ChainHead): void {
    if (this.#failures > 0) {
      this.#deps.logger.info('audit anchor posted again after the approval room was unreachable', {
        anchor: anchorText(head),
        failed_attempts: this.#failures,
      });
    }
    this.#failures = 0;
    this.#retryDelayMs = this.#firstRetryMs;
    this.#timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  #failed(head: ChainHead, err: unknown): void {
    if (this.#post === undefined) return; // stopping: the gateway is going away
    this.#failures += 1;
    // One warning per outage; the retries that follow are debug lines.
    const level = this.#failures === 1 ? 'warn' : 'debug';
    this.#deps.logger[level](
      'audit anchor could not be posted to the approval room; the current head is posted when it answers again',
      { anchor: anchorText(head), error: errorLine(err), retry_in_ms: this.#retryDelayMs },
    );
    this.#timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#request();
    }, this.#retryDelayMs);
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, this.#deps.intervalMs);
  }
}
