/**
 * An approval gateway (Matrix, the console, or a test's): the operations' GatewayPort
 * (operations/ports.ts: post requests and announcements, a health flag; `request_access`
 * answers `error` while the plane is unhealthy, existing grants keep working), and its
 * start and stop, which the daemon calls.
 */
import type { RequestRecord } from '../base/domain.js';
import type { GatewayPort } from '../operations/ports.js';
import type { Reply } from './reply.js';
import type { ApprovalEngine } from './engine.js';
import { CodedError } from '../base/coded-error.js';

export interface ApprovalGateway extends GatewayPort {
  /**
   * Rejects only for problems that a restart with a fixed configuration solves (the
   * daemon then refuses to start); an outage of the approval plane is handled inside:
   * the gateway starts unhealthy and recovers by itself.
   */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export type ApprovalUnavailableCode = 'not_started' | 'stopped' | 'unhealthy' | 'send_failed';

/** The approver cannot be reached; the caller must not create grants. */
export class ApprovalUnavailableError extends CodedError<ApprovalUnavailableCode> {
  override readonly name = 'ApprovalUnavailableError';
}

/**
 * A gateway with no transport, for tests: records what was posted and announced, and
 * lets a test speak as the approver through the same engine entry points a real
 * gateway uses.
 */
export class InMemoryGateway implements ApprovalGateway {
  readonly posted: RequestRecord[] = [];
  readonly announcements: string[] = [];
  /** Every reply the engine produced for `decide`/`react`. */
  readonly replies: Reply[] = [];
  /** Set to false to simulate the approval plane being down. */
  up = true;
  #state: 'new' | 'started' | 'stopped' = 'new';
  readonly #engine: ApprovalEngine | undefined;
  readonly #actor: string;

  constructor(deps: { engine?: ApprovalEngine; actor?: string } = {}) {
    this.#engine = deps.engine;
    this.#actor = deps.actor ?? '@owner:test';
  }

  async start(): Promise<void> {
    this.#state = 'started';
  }

  async stop(): Promise<void> {
    this.#state = 'stopped';
  }

  healthy(): boolean {
    return this.#state === 'started' && this.up;
  }

  #ensureAvailable(): void {
    if (this.#state === 'new')
      throw new ApprovalUnavailableError('not_started', 'approval gateway not started');
    if (this.#state === 'stopped')
      throw new ApprovalUnavailableError('stopped', 'approval gateway stopped');
    if (!this.up) throw new ApprovalUnavailableError('unhealthy', 'approval gateway is down');
  }

  async postRequest(request: RequestRecord): Promise<void> {
    this.#ensureAvailable();
    this.posted.push(request);
  }

  async announce(text: string): Promise<void> {
    this.#ensureAvailable();
    this.announcements.push(text);
  }

  /** The approver types `text`. `null`: the engine ignored it as chatter. */
  async decide(text: string): Promise<Reply | null> {
    const r = await this.#requireEngine().handleText(text, this.#actor);
    if (r !== null) this.replies.push(r);
    return r;
  }

  /** The approver reacts with `key` on request `requestId`'s message. */
  async react(key: string, requestId: number): Promise<Reply | null> {
    const r = await this.#requireEngine().handleReaction(key, requestId, this.#actor);
    if (r !== null) this.replies.push(r);
    return r;
  }

  #requireEngine(): ApprovalEngine {
    if (this.#engine === undefined) throw new Error('InMemoryGateway: no engine given');
    return this.#engine;
  }
}
