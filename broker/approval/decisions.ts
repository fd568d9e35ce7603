/**
 * The approver's decisions on the grant store: approve (all or some items, for how
 * long), deny (one request or every pending one), revoke (a request, an instance,
 * everything), and the read-only answers status and show; each decision audited,
 * refusals included, and each answered with what changed and until when, or why
 * nothing happened. The engine (engine.ts) runs them one at a time.
 *
 * A decision cannot be audited before it is made (the store decides atomically whether
 * the request was still pending), so the `decision` line follows the store call; if it
 * cannot be written, the grants just made are revoked again and the reply says so.
 */
import type { CheckoutLockRecord, Clock, GrantRecord, RequestRecord } from '../base/domain.js';
import { errorLine } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { iso } from '../base/time.js';
import { formatDuration } from '../config.js';
import type { AuditEvent } from '../audit/events.js';
import type { GrantDatabase } from '../grants/index.js';
import type { Command, RevokeTarget } from './command.js';
import {
  formatInstant,
  grantLines,
  plural,
  renderLines,
  type Line,
  type Rendered,
} from './format.js';
import { renderCommand } from './parser.js';
import { refusalText, type DecideRefusalCode } from './refusals.js';

export type { DecideRefusalCode } from './refusals.js';

/** The answer to one command. `granted`/`revoked`: what changed, for the caller to act on. */
export interface Reply {
  /** Plain text (Matrix `body`, console output). */
  text: string;
  /** The same as Matrix `formatted_body`: paths in `<code>`, everything escaped. */
  html: string;
  granted?: GrantRecord[];
  revoked?: GrantRecord[];
  /** The command was refused and changed nothing (the owner commands exit 3 on it). */
  refused?: true;
  /**
   * Further messages that belong to this answer, sent after it in order (`show N` of a
   * request too large for one Matrix event).
   */
  continued?: Rendered[];
}

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
  /** Optional: checkout locks not yet confirmed released, for `status`. */
  openCheckoutLocks?(): readonly CheckoutLockRecord[];
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
  append(event: AuditEvent): Promise<unknown>;
}

export interface LifecyclePolicy {
  /** A pending request older than this is expired: it can no longer be decided. */
  pending_timeout: number;
  default_grant: number;
  max_grant: number;
  /** How many requests may wait at once (shown in help). */
  max_pending?: number | undefined;
}

export interface DecisionDeps {
  readonly store: ApprovalStore;
  readonly audit: ApprovalAudit;
  readonly now: Clock;
  readonly lifecycle: LifecyclePolicy;
  readonly instances: { has(name: string): boolean; keys(): Iterable<string> };
  readonly onRevoked: ((grants: GrantRecord[]) => Promise<void>) | undefined;
  readonly logger: Logger;
}

export function reply(
  lines: readonly Line[],
  extra: Pick<Reply, 'granted' | 'revoked'> = {},
): Reply {
  const r: Rendered = renderLines(lines);
  return { text: r.plain, html: r.html, ...extra };
}

export const say = (...texts: string[]): Reply => reply(texts.map((t) => [t]));

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

/** Past its pending time: it can no longer be decided, even before the sweep marks it. */
export function pendingTooLong(request: RequestRecord, now: number, timeoutMs: number): boolean {
  return request.state === 'pending' && now >= request.createdAt + timeoutMs;
}

export class Decisions {
  readonly #deps: DecisionDeps;

  constructor(deps: DecisionDeps) {
    this.#deps = deps;
  }

  /** Appends; on failure logs and returns false (the caller decides what that means). */
  async record(event: AuditEvent): Promise<boolean> {
    try {
      await this.#deps.audit.append(event);
      return true;
    } catch (err) {
      this.#deps.logger.error('audit append failed', { event: event.event, error: errorLine(err) });
      return false;
    }
  }

  async notifyRevoked(grants: GrantRecord[]): Promise<boolean> {
    if (grants.length === 0 || this.#deps.onRevoked === undefined) return true;
    try {
      await this.#deps.onRevoked(grants);
      return true;
    } catch (err) {
      this.#deps.logger.error('follow-up of a revoke failed', { error: errorLine(err) });
      return false;
    }
  }

  /** A request that may not be decided any more because its pending time ran out. */
  pendingTooLong(request: RequestRecord): boolean {
    return pendingTooLong(request, this.#deps.now(), this.#deps.lifecycle.pending_timeout);
  }

  async refuse(
    command: Command & { request: number },
    actor: string,
    code: DecideRefusalCode,
    request: RequestRecord | undefined,
  ): Promise<Reply> {
    const recorded = await this.record({
      event: 'decision',
      request: command.request,
      actor,
      command: renderCommand(command),
      outcome: 'refused',
      code,
    });
    const text = refusalText(command.request, code, request, command, this.#deps);
    const answer = recorded
      ? say(text)
      : say(text, '(The audit log could not record this refusal.)');
    return { ...answer, refused: true };
  }

  async approve(command: Extract<Command, { kind: 'approve' }>, actor: string): Promise<Reply> {
    const n = command.request;
    const before = this.#deps.store.getRequest(n);
    if (before === undefined) return this.refuse(command, actor, 'unknown_request', before);
    // Security: silence grants nothing. A request past its pending time cannot be
    // approved even if the sweeper has not marked it expired yet.
    if (this.pendingTooLong(before)) return this.refuse(command, actor, 'expired', before);
    const durationMs = command.durationMs ?? this.#deps.lifecycle.default_grant;
    if (!Number.isSafeInteger(durationMs) || durationMs <= 0) {
      return this.refuse(command, actor, 'bad_duration', before);
    }
    // Security: never longer than the owner's configured maximum; checked here and
    // again by the store, which is the authority.
    if (durationMs > this.#deps.lifecycle.max_grant) {
      return this.refuse(command, actor, 'expiry_above_max', before);
    }
    const result = this.#deps.store.decide(n, {
      kind: 'approve',
      ...(command.items === undefined ? {} : { items: command.items }),
      durationMs,
      maxMs: this.#deps.lifecycle.max_grant,
      by: actor,
    });
    if (!result.ok) {
      return this.refuse(command, actor, result.code, this.#deps.store.getRequest(n) ?? before);
    }
    const granted = result.granted;
    const recorded = await this.record({
      event: 'decision',
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
      const undone = this.#deps.store.revokeGrants(granted.map((g) => g.id));
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
    const until = granted[0]?.expiresAt ?? this.#deps.now() + durationMs;
    const lines: Line[] = [
      [
        `Approved request ${n}`,
        skipped.length === 0 ? '' : ` (${granted.length} of ${result.request.items.length} items)`,
        ` until ${formatInstant(until)} (${formatDuration(durationMs)}):`,
      ],
      ...grantLines(granted, this.#deps.now()),
    ];
    if (skipped.length > 0) {
      lines.push([
        `Not granted: item${skipped.length === 1 ? '' : 's'} ${skipped.map((i) => i.n).join(', ')}.`,
      ]);
    }
    return reply(lines, { granted });
  }

  async deny(n: number, actor: string): Promise<Reply> {
    const command: Command = { kind: 'deny', request: n };
    const before = this.#deps.store.getRequest(n);
    if (before === undefined) return this.refuse(command, actor, 'unknown_request', before);
    if (this.pendingTooLong(before)) return this.refuse(command, actor, 'expired', before);
    const result = this.#deps.store.decide(n, { kind: 'deny', by: actor });
    if (!result.ok) {
      return this.refuse(command, actor, result.code, this.#deps.store.getRequest(n) ?? before);
    }
    const recorded = await this.record({
      event: 'decision',
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

  /**
   * `deny all`: every request still pending is denied, each with its own audit line,
   * and the answer says how many and which.
   */
  async denyAll(actor: string): Promise<Reply> {
    const pending = (this.#deps.store.pendingRequests?.() ?? []).filter(
      (r) => !this.pendingTooLong(r),
    );
    if (pending.length === 0) return say('No pending requests; nothing to deny.');
    const denied: number[] = [];
    const failed: string[] = [];
    let unrecorded = 0;
    for (const request of pending) {
      const result = this.#deps.store.decide(request.id, { kind: 'deny', by: actor });
      if (!result.ok) {
        failed.push(`request ${request.id}: ${result.message}`);
        continue;
      }
      denied.push(request.id);
      const recorded = await this.record({
        event: 'decision',
        request: request.id,
        actor,
        command: 'deny all',
        outcome: 'denied',
      });
      if (!recorded) unrecorded += 1;
    }
    const lines: Line[] = [];
    if (denied.length > 0) {
      lines.push([
        `Denied ${plural(denied.length, 'pending request')} (${denied.join(', ')}); nothing was granted.`,
      ]);
    }
    if (failed.length > 0) lines.push([`Not denied: ${failed.join('; ')}.`]);
    if (unrecorded > 0) {
      lines.push([`(The audit log could not record ${unrecorded} of these denials.)`]);
    }
    return reply(lines);
  }

  async revoke(target: RevokeTarget, actor: string, cause: string): Promise<Reply> {
    let revoked: GrantRecord[];
    let what: string;
    let nothingRevoked: string | undefined;
    if (target === 'all') {
      revoked = this.#deps.store.revokeAll();
      what = 'all grants';
    } else if ('request' in target) {
      const request = this.#deps.store.getRequest(target.request);
      if (request === undefined) {
        await this.record({
          event: 'revoke',
          actor,
          cause,
          target: { request: target.request },
          outcome: 'refused',
          code: 'unknown_request',
        });
        return { ...say(`There is no request ${target.request}; nothing changed.`), refused: true };
      }
      revoked = this.#deps.store.revokeRequest(target.request);
      what = `request ${target.request}`;
      // A pending request has nothing to revoke, and still waits: say how to refuse it.
      if (request.state === 'pending') {
        nothingRevoked = `Request ${target.request} is still pending: nothing is granted yet, so nothing was revoked. Type "deny ${target.request}" to refuse it.`;
      }
    } else {
      if (!this.#deps.instances.has(target.instance)) {
        await this.record({
          event: 'revoke',
          actor,
          cause,
          target,
          outcome: 'refused',
          code: 'unknown_instance',
        });
        const known = [...this.#deps.instances.keys()].join(', ');
        return {
          ...say(`There is no instance "${target.instance}" (known: ${known}); nothing changed.`),
          refused: true,
        };
      }
      revoked = this.#deps.store.revokeInstance(target.instance);
      what = `instance ${target.instance}`;
    }
    // Revoking only narrows access, so it stands even if the audit line fails.
    const recorded = await this.record({
      event: 'revoke',
      actor,
      cause,
      target,
      outcome: 'revoked',
      grants: revoked.map((g) => g.id),
    });
    const followedUp = await this.notifyRevoked(revoked);
    const lines: Line[] =
      revoked.length === 0
        ? [[nothingRevoked ?? `No active grants for ${what}; nothing to revoke.`]]
        : [
            [
              cause === 'approval_withdrawn'
                ? `Approval of ${what} withdrawn: revoked ${plural(revoked.length, 'grant')}:`
                : `Revoked ${plural(revoked.length, 'grant')} (${what}):`,
            ],
            ...grantLines(revoked),
          ];
    if (!recorded) lines.push(['(The audit log could not record this revoke.)']);
    if (!followedUp) lines.push(['(Releasing locks or transfers failed; see the broker log.)']);
    return reply(lines, { revoked });
  }
}
