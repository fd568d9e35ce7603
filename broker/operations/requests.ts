/**
 * Access requests (request_access) and their status (check_access on the agent surface).
 *
 * A request is checked completely before anything is stored: a known instance, a
 * reason the owner can read without hidden characters, and every item a canonical
 * path (refused, never repaired). It is stored, audited, then handed to the approval
 * gateway. Nothing here grants anything; only the owner's decision does.
 */
import type { Clock, Mode, RequestRecord } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { type Pipeline } from '../operations.js';
import { errorDetail } from '../base/errors.js';
import { failure, ok, pending, refused, type Envelope } from '../base/envelope.js';
import { escapeForReason, HIDDEN_IN_TEXT } from '../base/text.js';
import { canonicalPath } from '../wall.js';
import type { GatewayPort, GrantsPort } from './ports.js';
import { iso } from '../base/time.js';
import { type CallContext } from '../base/call.js';

export const APPROVAL_UNAVAILABLE = 'approval channel unavailable; existing grants still work';

export interface RequestDeps {
  readonly pipeline: Pipeline;
  readonly grants: GrantsPort;
  readonly gateway: GatewayPort;
  readonly instances: ReadonlyMap<string, unknown>;
  readonly logger: Logger;
  readonly now: Clock;
}

export class AccessRequests {
  constructor(private readonly deps: RequestDeps) {}

  async request(
    ctx: CallContext,
    args: { instance: string; reason: string; items: { path: string; mode: Mode }[] },
  ): Promise<Envelope> {
    const { pipeline, grants, gateway } = this.deps;
    // Security: only instances from the owner's configuration exist.
    if (!this.deps.instances.has(args.instance)) {
      return pipeline.refuse(
        ctx,
        'unknown_instance',
        `unknown instance "${escapeForReason(args.instance, 40)}"; nothing was requested`,
        { instance: args.instance },
        'call list_instances for the configured names',
      );
    }
    // Security: the reason is shown to the owner; characters that can hide or reorder text
    // (controls, bidi overrides, zero-width and other format characters) are refused.
    if (HIDDEN_IN_TEXT.test(args.reason) || args.reason.trim() === '') {
      return pipeline.refuse(
        ctx,
        'invalid_arguments',
        'reason must be plain readable text (no control, zero-width or bidi characters); nothing was requested',
        { instance: args.instance },
      );
    }
    const items: { path: string; mode: Mode }[] = [];
    const seen = new Set<string>();
    for (const [i, item] of args.items.entries()) {
      const canonical = canonicalPath(item.path);
      if (!canonical.ok) {
        return pipeline.refuse(
          ctx,
          'invalid_path',
          `item ${i + 1}: ${canonical.reason}; nothing was requested`,
          { instance: args.instance, item: i + 1 },
          'paths are refused, never repaired: send plain relative paths like "Documents/report.odt"',
        );
      }
      const key = `${item.mode}\u0000${canonical.path}`;
      if (seen.has(key)) {
        return pipeline.refuse(
          ctx,
          'invalid_arguments',
          `item ${i + 1} repeats an earlier item; list each path once; nothing was requested`,
          { instance: args.instance, item: i + 1 },
        );
      }
      seen.add(key);
      items.push({ path: canonical.path, mode: item.mode });
    }
    if (!gateway.healthy()) {
      await pipeline.auditBestEffort('refused', {
        surface: ctx.surface,
        tool: ctx.tool,
        instance: args.instance,
        code: 'approval_unavailable',
        correlation_id: ctx.correlationId,
      });
      return failure('approval_unavailable', APPROVAL_UNAVAILABLE, true, {
        hint: 'try again later; grants you already have keep working',
      });
    }

    const record = grants.createRequest({ instance: args.instance, reason: args.reason, items });
    try {
      await pipeline.audit('request', {
        surface: ctx.surface,
        tool: ctx.tool,
        request: record.id,
        instance: record.instance,
        reason: record.reason,
        items: record.items.map((it) => ({ n: it.n, path: it.path, mode: it.mode })),
        correlation_id: ctx.correlationId,
      });
    } catch (error) {
      // Security: an unaudited request must never become approvable.
      this.withdraw(record.id, error);
      return refused('audit_unavailable', 'audit log unavailable; request refused', {
        retry: false,
      });
    }
    try {
      await gateway.postRequest(record);
    } catch (error) {
      this.withdraw(record.id, error);
      await pipeline.auditBestEffort('decision', {
        request: record.id,
        decision: 'deny',
        by: 'broker',
        reason: 'the approval channel could not deliver the request',
        correlation_id: ctx.correlationId,
      });
      return failure('approval_unavailable', APPROVAL_UNAVAILABLE, true, {
        hint: 'try again later; grants you already have keep working',
      });
    }
    return pending(
      `request #${record.id} sent to the owner; call check_access with request ${record.id} to see the decision`,
      {
        request: record.id,
        items: record.items.map((it) => ({ n: it.n, path: it.path, mode: it.mode })),
        hint: 'approval is a human decision and may take a while; do not send the same request again',
      },
    );
  }

  status(ctx: CallContext, args: { request?: number | undefined }): Envelope {
    void ctx;
    if (args.request === undefined) return this.activeGrants();
    const record = this.deps.grants.getRequest(args.request);
    if (record === undefined) {
      return refused('unknown_request', `there is no request #${args.request}`, {
        hint: 'call check_access without arguments to see your active grants',
      });
    }
    return renderRequest(record, this.deps.now());
  }

  private activeGrants(): Envelope {
    const grants = this.deps.grants.activeGrants().map((g) => ({
      grant: g.id,
      request: g.requestId,
      instance: g.instance,
      path: g.path,
      mode: g.mode,
      expires_at: iso(g.expiresAt),
    }));
    return ok(
      grants.length === 0
        ? 'no active grants; call request_access to ask the owner for access'
        : `${grants.length} active grant${grants.length === 1 ? '' : 's'}`,
      { grants },
    );
  }

  private withdraw(id: number, error: unknown): void {
    this.deps.logger.error('request withdrawn', { request: id, error: errorDetail(error) });
    this.deps.grants.decide(id, { kind: 'deny', by: 'broker' });
  }
}

const STATE_MESSAGES: Record<RequestRecord['state'], (id: number) => string> = {
  pending: (id) => `request #${id} is waiting for the owner; call check_access again later`,
  approved: (id) => `request #${id} was approved; the items are usable until their expiry`,
  partially_approved: (id) =>
    `request #${id} was partially approved; only the items marked granted are usable`,
  denied: (id) => `request #${id} was denied; do not send it again as is`,
  expired: (id) => `request #${id} expired without a decision; request again if you still need it`,
  discarded: (id) =>
    `request #${id} was discarded when the broker restarted; request again if you still need it`,
};

function renderRequest(record: RequestRecord, now: number): Envelope {
  const items = record.items.map((it) => ({
    n: it.n,
    path: it.path,
    mode: it.mode,
    granted: it.grant !== null,
    ...(it.grant === null
      ? {}
      : {
          grant: it.grant.id,
          // A grant past its expiry is expired even before the sweep has recorded it.
          grant_state:
            it.grant.state === 'active' && !(now < it.grant.expiresAt) ? 'expired' : it.grant.state,
          expires_at: iso(it.grant.expiresAt),
        }),
  }));
  const fields = { request: record.id, instance: record.instance, state: record.state, items };
  const message = STATE_MESSAGES[record.state](record.id);
  return record.state === 'pending' ? pending(message, fields) : ok(message, fields);
}
