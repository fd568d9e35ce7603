/**
 * Applies the approver's commands to the grant store, audits each decision, and says
 * what happened. Transport-independent: the Matrix and console gateways check who is
 * speaking and pass `actor`; this module never sees a chat event.
 *
 * Every approve/deny/revoke is answered (what is granted now and until when, or why
 * nothing happened) and written to the audit log, refusals included. A decision
 * cannot be audited before it is made (the store decides atomically whether the
 * request was still pending), so the `decision` line follows the store call; if it
 * cannot be written, the grants just made are revoked again and the reply says so.
 * Commands run one at a time, so audit lines follow the order of the state changes.
 */
import type { Clock, GrantRecord, RequestRecord } from '../base/domain.js';
import { errorLine } from '../base/errors.js';
import { iso } from '../base/time.js';
import { silentLogger, type Logger } from '../base/log.js';
import { formatDuration } from '../config.js';
import type { GrantDatabase } from '../grants/index.js';
import { reactionCommand } from './emoji.js';
import {
  formatInstant,
  grantLine,
  renderLines,
  renderStatus,
  type Line,
  type Rendered,
} from './format.js';
import {
  HELP_TEXT,
  parseCommand,
  renderCommand,
  type Command,
  type RevokeTarget,
} from './parser.js';
import { MemoryReactionLinks, ReactionLinks, type ReactionLinkStore } from './reaction-links.js';
import { escapeHtml } from '../base/text.js';

/** The answer to one command. `granted`/`revoked`: what changed, for the caller to act on. */
export interface Reply {
  /** Plain text (Matrix `body`, console output). */
  text: string;
  /** The same as Matrix `formatted_body`: paths in `<code>`, everything escaped. */
  html: string;
  granted?: GrantRecord[];
  revoked?: GrantRecord[];
}

export type DecideRefusalCode =
  | 'unknown_request'
  | 'already_decided'
  | 'expired'
  | 'bad_items'
  | 'expiry_above_max'
  | 'bad_duration';

/** What the engine uses of broker/grants' GrantStore (the real class satisfies it). */
export interface ApprovalStore {
  /**
   * Optional (the real store has it): the database's random identity. Chat messages
   * carry it next to the request number; see `ApprovalEngine.storeId`.
   */
  readonly storeId?: string;
  getRequest(id: number): RequestRecord | undefined;
  decide(
    id: number,
    d:
      | { kind: 'approve'; items?: number[]; durationMs: number; maxMs: number; by: string }
      | { kind: 'deny'; by: string },
  ):
    | { ok: true; request: RequestRecord; granted: GrantRecord[] }
    | { ok: false; code: DecideRefusalCode; message: string };
  activeGrants(): GrantRecord[];
  revokeRequest(id: number): GrantRecord[];
  revokeInstance(name: string): GrantRecord[];
  revokeAll(): GrantRecord[];
  revokeGrants(ids: number[]): GrantRecord[];
  /** Optional: pending requests, oldest first, for `status`. */
  pendingRequests?(): RequestRecord[];
  /**
   * Optional (the real store has it): the SQLite database, where the reaction links
   * persist (reaction-links.ts), so a withdrawn 👍 is honoured after a restart.
   * Without it the engine remembers them in memory.
   */
  readonly database?: GrantDatabase;
}

/** A chat reaction event, and the room it is in (the gateway fills it in). */
export interface ReactionRef {
  eventId: string;
  roomId: string;
}

/** What the engine uses of broker/audit's AuditLog. */
export interface ApprovalAudit {
  append(event: string, fields: Record<string, unknown>): Promise<unknown>;
}

export interface LifecyclePolicy {
  /** A pending request older than this is expired: it can no longer be decided. */
  pending_timeout: number;
  default_grant: number;
  max_grant: number;
}

type PolicyDeps =
  | { config: { lifecycle: LifecyclePolicy; instances: ReadonlyMap<string, unknown> } }
  | { lifecycle: LifecyclePolicy; instances: ReadonlySet<string> | ReadonlyMap<string, unknown> };

export type ApprovalEngineDeps = PolicyDeps & {
  store: ApprovalStore;
  audit: ApprovalAudit;
  now: Clock;
  /** Called with grants that just ended (unlock files, abort transfers). Errors are logged. */
  onRevoked?: (grants: GrantRecord[]) => Promise<void>;
  logger?: Logger;
  /** Where approving reactions are remembered; default the store's database, else memory. */
  reactions?: ReactionLinkStore;
};

function reply(lines: readonly Line[], extra: Pick<Reply, 'granted' | 'revoked'> = {}): Reply {
  const r: Rendered = renderLines(lines);
  return { text: r.plain, html: r.html, ...extra };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const say = (...texts: string[]): Reply => reply(texts.map((t) => [t]));

function auditGrant(g: GrantRecord): Record<string, unknown> {
  return {
    id: g.id,
    item: g.itemNo,
    instance: g.instance,
    path: g.path,
    mode: g.mode,
    expires_at: iso(g.expiresAt),
  };
}

export class ApprovalEngine {
  /**
   * The grant database's identity (undefined when the store has none). Request numbers
   * restart at 1 in a new database, so a gateway that finds a request number in an old
   * message must also find this id there before acting on it.
   */
  readonly storeId: string | undefined;
  private readonly store: ApprovalStore;
  private readonly audit: ApprovalAudit;
  private readonly now: Clock;
  private readonly lifecycle: LifecyclePolicy;
  private readonly instances: { has(name: string): boolean; keys(): Iterable<string> };
  private readonly onRevoked: ((grants: GrantRecord[]) => Promise<void>) | undefined;
  private readonly logger: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly reactions: ReactionLinkStore;

  constructor(deps: ApprovalEngineDeps) {
    this.store = deps.store;
    this.storeId = deps.store.storeId;
    this.audit = deps.audit;
    this.now = deps.now;
    this.onRevoked = deps.onRevoked;
    this.logger = deps.logger ?? silentLogger;
    this.reactions =
      deps.reactions ??
      (deps.store.database === undefined
        ? new MemoryReactionLinks()
        : new ReactionLinks(deps.store.database));
    if ('config' in deps) {
      this.lifecycle = deps.config.lifecycle;
      this.instances = deps.config.instances;
    } else {
      this.lifecycle = deps.lifecycle;
      this.instances = deps.instances;
    }
  }

  /** Parses and applies one typed message. `null`: chatter, not for the broker. */
  async handleText(text: string, actor: string): Promise<Reply | null> {
    const parsed = parseCommand(text);
    if (parsed === null) return null;
    // The reason may quote what was typed; shown escaped like any other outside text.
    if (!parsed.ok) return reply([[{ text: parsed.reason }]]);
    return this.apply(parsed.command, actor);
  }

  /**
   * Applies an allow-listed reaction on request `requestId`'s message; else `null`.
   * With `reaction` (the event), a 👍 that granted something is remembered, so that
   * withdrawing it later undoes that approval (`undoApprovalReaction`).
   */
  async handleReaction(
    key: string,
    requestId: number,
    actor: string,
    reaction?: ReactionRef,
  ): Promise<Reply | null> {
    const command = reactionCommand(key, requestId);
    if (command === null) return null;
    return this.serially(async () => {
      const answer = await this.applyNow(command, actor);
      if (reaction === undefined || command.kind !== 'approve') return answer;
      if ((answer.granted?.length ?? 0) === 0) return answer;
      return this.linkReaction(answer, reaction, requestId, actor);
    });
  }

  /** Applies one command on behalf of `actor` (already verified by the gateway). */
  apply(command: Command, actor: string): Promise<Reply> {
    return this.serially(() => this.applyNow(command, actor));
  }

  /**
   * The approver withdrew their 👍: end what request `requestId` granted. For callers
   * that track the reaction themselves; `undoApprovalReaction` looks it up.
   */
  undoApproval(requestId: number, actor: string): Promise<Reply> {
    return this.serially(() =>
      this.guarded('undo', () => this.revoke({ request: requestId }, actor, 'approval_withdrawn')),
    );
  }

  /**
   * The approver withdrew the reaction `reaction`: when it is the 👍 that approved a
   * request, end what that request granted and say so; `null` when it approved nothing
   * (another reaction, a message, or an approval already withdrawn).
   */
  undoApprovalReaction(reaction: ReactionRef, actor: string): Promise<Reply | null> {
    return this.serially(async () => {
      let requestId: number | undefined;
      try {
        requestId = this.takeReaction(reaction, actor);
      } catch (err) {
        this.logger.error('looking up a withdrawn reaction failed', { error: errorLine(err) });
        return say(
          'The broker could not tell whether the removed reaction approved a request; nothing was revoked.',
          'Use "revoke N" to withdraw an approval.',
        );
      }
      if (requestId === undefined) return null;
      const id = requestId;
      return this.guarded('undo', () => this.revoke({ request: id }, actor, 'approval_withdrawn'));
    });
  }

  private linkReaction(
    answer: Reply,
    reaction: ReactionRef,
    requestId: number,
    actor: string,
  ): Reply {
    const link = { ...reaction, requestId, approver: actor };
    try {
      this.reactions.record(link);
      return answer;
    } catch (err) {
      // The approval stands (it is recorded and audited); only the shortcut is lost.
      this.logger.error('could not record which reaction approved the request', {
        request: requestId,
        error: errorLine(err),
      });
      const extra = `(Removing the 👍 will not undo this; use "revoke ${requestId}".)`;
      return {
        ...answer,
        text: `${answer.text}\n${extra}`,
        html: `${answer.html}<br>${escapeHtml(extra)}`,
      };
    }
  }

  private takeReaction(reaction: ReactionRef, actor: string): number | undefined {
    return this.reactions.take(reaction.eventId, { roomId: reaction.roomId, approver: actor });
  }

  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async guarded(what: string, task: () => Promise<Reply>): Promise<Reply> {
    try {
      return await task();
    } catch (err) {
      this.logger.error('approval command failed', { command: what, error: errorLine(err) });
      return say(
        'The broker hit an internal error; the command may not have been applied.',
        'Send "status" to see the current grants.',
      );
    }
  }

  private applyNow(command: Command, actor: string): Promise<Reply> {
    return this.guarded(command.kind, async () => {
      switch (command.kind) {
        case 'approve':
          return this.approve(command, actor);
        case 'deny':
          return this.deny(command.request, actor);
        case 'revoke':
          return this.revoke(command.target, actor, 'command');
        case 'status':
          return this.status();
        case 'help':
          return say(HELP_TEXT);
      }
    });
  }

  /** Appends; on failure logs and returns false (the caller decides what that means). */
  private async record(event: string, fields: Record<string, unknown>): Promise<boolean> {
    try {
      await this.audit.append(event, fields);
      return true;
    } catch (err) {
      this.logger.error('audit append failed', { event, error: errorLine(err) });
      return false;
    }
  }

  private async notifyRevoked(grants: GrantRecord[]): Promise<boolean> {
    if (grants.length === 0 || this.onRevoked === undefined) return true;
    try {
      await this.onRevoked(grants);
      return true;
    } catch (err) {
      this.logger.error('follow-up of a revoke failed', { error: errorLine(err) });
      return false;
    }
  }

  /** A request that may not be decided any more because its pending time ran out. */
  private pendingTooLong(request: RequestRecord): boolean {
    return (
      request.state === 'pending' &&
      this.now() >= request.createdAt + this.lifecycle.pending_timeout
    );
  }

  private refusalText(
    n: number,
    code: DecideRefusalCode,
    request: RequestRecord | undefined,
    command: Command,
  ): string {
    switch (code) {
      case 'unknown_request':
        return `There is no request ${n}; nothing changed.`;
      case 'already_decided': {
        const how = request === undefined ? '' : ` (${request.state.replace('_', ' ')}`;
        const by = request?.decidedBy ? ` by ${request.decidedBy}` : '';
        const when =
          request?.decidedAt === null || request === undefined
            ? ''
            : ` at ${formatInstant(request.decidedAt)}`;
        return `Request ${n} was already decided${how}${by}${when}${how === '' ? '' : ')'}; nothing changed.`;
      }
      case 'expired':
        return `Request ${n} expired without a decision; nothing was granted. The agent can ask again.`;
      case 'bad_items': {
        const count = request?.items.length ?? 0;
        const asked = command.kind === 'approve' ? (command.items ?? []).join(',') : '';
        return `Request ${n} has items 1 to ${count}; "${asked}" does not fit. Nothing was granted.`;
      }
      case 'bad_duration':
        return `The expiry must be a positive whole duration (check lifecycle in the config); nothing was granted.`;
      case 'expiry_above_max': {
        const asked =
          command.kind === 'approve' && command.durationMs !== undefined
            ? formatDuration(command.durationMs)
            : formatDuration(this.lifecycle.default_grant);
        return `The expiry ${asked} is above the maximum of ${formatDuration(this.lifecycle.max_grant)}; nothing was granted. Use a shorter one, e.g. "approve ${n} ${formatDuration(this.lifecycle.max_grant)}".`;
      }
    }
  }

  private async refuse(
    command: Command & { request: number },
    actor: string,
    code: DecideRefusalCode,
    request: RequestRecord | undefined,
  ): Promise<Reply> {
    const recorded = await this.record('decision', {
      request: command.request,
      actor,
      command: renderCommand(command),
      outcome: 'refused',
      code,
    });
    const text = this.refusalText(command.request, code, request, command);
    return recorded ? say(text) : say(text, '(The audit log could not record this refusal.)');
  }

  private async approve(
    command: Extract<Command, { kind: 'approve' }>,
    actor: string,
  ): Promise<Reply> {
    const n = command.request;
    const before = this.store.getRequest(n);
    if (before === undefined) return this.refuse(command, actor, 'unknown_request', before);
    // Security: silence grants nothing. A request past its pending time cannot be
    // approved even if the sweeper has not marked it expired yet.
    if (this.pendingTooLong(before)) return this.refuse(command, actor, 'expired', before);
    const durationMs = command.durationMs ?? this.lifecycle.default_grant;
    if (!Number.isSafeInteger(durationMs) || durationMs <= 0) {
      return this.refuse(command, actor, 'bad_duration', before);
    }
    // Security: never longer than the owner's configured maximum; checked here and
    // again by the store, which is the authority.
    if (durationMs > this.lifecycle.max_grant) {
      return this.refuse(command, actor, 'expiry_above_max', before);
    }
    const result = this.store.decide(n, {
      kind: 'approve',
      ...(command.items === undefined ? {} : { items: command.items }),
      durationMs,
      maxMs: this.lifecycle.max_grant,
      by: actor,
    });
    if (!result.ok) {
      return this.refuse(command, actor, result.code, this.store.getRequest(n) ?? before);
    }
    const granted = result.granted;
    const recorded = await this.record('decision', {
      request: n,
      actor,
      command: renderCommand(command),
      outcome: result.request.state,
      items: granted.map((g) => g.itemNo),
      duration_ms: durationMs,
      grants: granted.map(auditGrant),
    });
    if (!recorded) {
      // Security: an approval that is not in the audit log must not stand.
      const undone = this.store.revokeGrants(granted.map((g) => g.id));
      await this.notifyRevoked(undone);
      return reply(
        [
          [
            `The decision on request ${n} could not be recorded in the audit log, so it was undone: nothing is granted.`,
          ],
          ['Check the broker log and disk; the agent has to ask again.'],
        ],
        { revoked: undone },
      );
    }
    const skipped = result.request.items.filter((i) => !granted.some((g) => g.itemNo === i.n));
    const until = granted[0]?.expiresAt ?? this.now() + durationMs;
    const lines: Line[] = [
      [
        `Approved request ${n}`,
        skipped.length === 0 ? '' : ` (${granted.length} of ${result.request.items.length} items)`,
        ` until ${formatInstant(until)} (${formatDuration(durationMs)}):`,
      ],
      ...granted.map((g) => grantLine(g, this.now())),
    ];
    if (skipped.length > 0) {
      lines.push([
        `Not granted: item${skipped.length === 1 ? '' : 's'} ${skipped.map((i) => i.n).join(', ')}.`,
      ]);
    }
    return reply(lines, { granted });
  }

  private async deny(n: number, actor: string): Promise<Reply> {
    const command: Command = { kind: 'deny', request: n };
    const before = this.store.getRequest(n);
    if (before === undefined) return this.refuse(command, actor, 'unknown_request', before);
    if (this.pendingTooLong(before)) return this.refuse(command, actor, 'expired', before);
    const result = this.store.decide(n, { kind: 'deny', by: actor });
    if (!result.ok) {
      return this.refuse(command, actor, result.code, this.store.getRequest(n) ?? before);
    }
    const recorded = await this.record('decision', {
      request: n,
      actor,
      command: renderCommand(command),
      outcome: 'denied',
    });
    // A denial grants nothing, so there is nothing to undo when the audit fails.
    return recorded
      ? say(`Denied request ${n}; nothing was granted.`)
      : say(
          `Denied request ${n}; nothing was granted.`,
          '(The audit log could not record this denial.)',
        );
  }

  private async revoke(target: RevokeTarget, actor: string, cause: string): Promise<Reply> {
    let revoked: GrantRecord[];
    let what: string;
    if (target === 'all') {
      revoked = this.store.revokeAll();
      what = 'all grants';
    } else if ('request' in target) {
      const request = this.store.getRequest(target.request);
      if (request === undefined) {
        await this.record('revoke', {
          actor,
          cause,
          target: { request: target.request },
          outcome: 'refused',
          code: 'unknown_request',
        });
        return say(`There is no request ${target.request}; nothing changed.`);
      }
      revoked = this.store.revokeRequest(target.request);
      what = `request ${target.request}`;
    } else {
      if (!this.instances.has(target.instance)) {
        await this.record('revoke', {
          actor,
          cause,
          target,
          outcome: 'refused',
          code: 'unknown_instance',
        });
        const known = [...this.instances.keys()].join(', ');
        return say(`There is no instance "${target.instance}" (known: ${known}); nothing changed.`);
      }
      revoked = this.store.revokeInstance(target.instance);
      what = `instance ${target.instance}`;
    }
    // Revoking only narrows access, so it stands even if the audit line fails.
    const recorded = await this.record('revoke', {
      actor,
      cause,
      target,
      outcome: 'revoked',
      grants: revoked.map((g) => g.id),
    });
    const followedUp = await this.notifyRevoked(revoked);
    const lines: Line[] =
      revoked.length === 0
        ? [[`No active grants for ${what}; nothing to revoke.`]]
        : [
            [
              cause === 'approval_withdrawn'
                ? `Approval of ${what} withdrawn: revoked ${plural(revoked.length, 'grant')}:`
                : `Revoked ${plural(revoked.length, 'grant')} (${what}):`,
            ],
            ...revoked.map((g) => grantLine(g)),
          ];
    if (!recorded) lines.push(['(The audit log could not record this revoke.)']);
    if (!followedUp) lines.push(['(Releasing locks or transfers failed; see the broker log.)']);
    return reply(lines, { revoked });
  }

  private async status(): Promise<Reply> {
    const now = this.now();
    const pending = this.store.pendingRequests?.().filter((r) => !this.pendingTooLong(r));
    const r = renderStatus({
      grants: this.store.activeGrants(),
      pending,
      now,
      pendingTimeout: this.lifecycle.pending_timeout,
    });
    return { text: r.plain, html: r.html };
  }
}
