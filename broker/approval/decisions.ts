/**
 * The approver's decisions on the grant store: approve (all or some items, for how
 * long) and deny (one request or every pending one), each audited, refusals included,
 * and each answered with what changed and until when, or why nothing happened.
 * Revoking is revocations.ts; the read-only answers are views.ts. The engine
 * (engine.ts) runs them one at a time.
 *
 * A decision cannot be audited before it is made (the store decides atomically whether
 * the request was still pending), so the `decision` line follows the store call; if it
 * cannot be written, the grants just made are revoked again and the reply says so.
 */
import type { Clock, GrantRecord, RequestRecord } from '../base/domain.js';
import { errorLine } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { iso } from '../base/time.js';
import { formatDuration } from '../config.js';
import type { AuditEvent } from '../audit/events.js';
import type { Command } from './command.js';
import { formatInstant, grantLines, plural, type Line } from './format.js';
import { renderCommand } from './parser.js';
import type { ApprovalAudit, ApprovalStore, LifecyclePolicy } from './ports.js';
import { refusalText, type DecideRefusalCode } from './refusals.js';
import { reply, say, type Reply } from './reply.js';

export interface DecisionDeps {
  readonly store: ApprovalStore;
  readonly audit: ApprovalAudit;
  readonly now: Clock;
  readonly lifecycle: LifecyclePolicy;
  readonly onRevoked: ((grants: GrantRecord[]) => Promise<void>) | undefined;
  readonly logger: Logger;
}

/** A grant as a decision's audit line names it. */
function auditGrant(g: GrantRecord) {
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
}
