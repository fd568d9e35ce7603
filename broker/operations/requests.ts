/**
 * Access requests (request_access) and their status (check_access on the agent surface).
 *
 * A request is checked completely before anything is stored: a known instance, a
 * reason the owner can read without hidden characters, and every item a canonical
 * path (refused, never repaired). It is stored, audited, then handed to the approval
 * gateway. Nothing here grants anything; only the owner's decision does.
 */
import type { CallContext } from '../base/call.js';
import type { Clock, GrantRecord, Kind, Mode, RequestRecord } from '../base/domain.js';
import { failure, refused } from '../base/envelope.js';
import {
  COLLECTION_WORDS,
  DEFAULT_KIND,
  isCollectionKind,
  kindGrants,
  kindModes,
  modeRefusal,
} from '../base/kinds.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { escapeForReason, HIDDEN_IN_TEXT } from '../base/text.js';
import { iso } from '../base/time.js';
import { canonicalPath, collectionName } from '../wall.js';
import type { AuditTrail } from './audit-trail.js';
import type { Outcome, Pipeline } from './pipeline.js';
import type { GatewayPort, GrantsPort } from './ports.js';
import type { Refusals } from './refusals.js';

export const APPROVAL_UNAVAILABLE = 'approval channel unavailable; existing grants still work';

export interface RequestDeps {
  readonly pipeline: Pipeline;
  readonly trail: AuditTrail;
  /** Refusals of request_access's own (approval unavailable, too many pending). */
  readonly refusals: Refusals;
  readonly grants: GrantsPort;
  readonly gateway: GatewayPort;
  readonly instances: ReadonlyMap<string, unknown>;
  /** lifecycle.max_pending: the most requests that may wait for the owner at once. */
  readonly maxPending: number;
  readonly logger: Logger;
  readonly now: Clock;
}

export class AccessRequests {
  readonly #deps: RequestDeps;

  constructor(deps: RequestDeps) {
    this.#deps = deps;
  }

  /** Stores, audits and posts a new request; its value is the pending request. */
  async request(
    ctx: CallContext,
    args: {
      instance: string;
      reason: string;
      items: { kind?: Kind | undefined; path: string; mode: Mode }[];
    },
  ): Promise<Outcome<RequestRecord>> {
    const { pipeline, trail, grants, gateway } = this.#deps;
    const refuse = async (...a: Parameters<Pipeline['refuse']>): Promise<Outcome<never>> => ({
      ok: false,
      envelope: await pipeline.refuse(...a),
    });
    // Security: only instances from the owner's configuration exist.
    if (!this.#deps.instances.has(args.instance)) {
      return refuse(
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
      return refuse(
        ctx,
        'invalid_arguments',
        'reason must be plain readable text (no control, zero-width or bidi characters); nothing was requested',
        { instance: args.instance },
      );
    }
    const items: { kind: Kind; path: string; mode: Mode }[] = [];
    const seen = new Set<string>();
    for (const [i, item] of args.items.entries()) {
      const kind = item.kind ?? DEFAULT_KIND;
      // Security: a kind is granted only its own modes (address books are read only); a
      // write item is refused here, before the owner is ever asked, rather than granted
      // as something it is not.
      if (!kindGrants(kind, item.mode)) {
        return refuse(
          ctx,
          'invalid_arguments',
          `item ${i + 1}: ${modeRefusal(kind, item.mode)}; nothing was requested`,
          { instance: args.instance, item: i + 1 },
          `send the item again with mode ${kindModes(kind)}`,
        );
      }
      if (isCollectionKind(kind)) {
        const name = collectionName(item.path);
        if (!name.ok) {
          return refuse(
            ctx,
            'invalid_path',
            `item ${i + 1}: ${name.reason}; nothing was requested`,
            { instance: args.instance, item: i + 1 },
            `name the ${COLLECTION_WORDS} by its name as collections lists it, e.g. "personal"`,
          );
        }
      }
      const canonical = canonicalPath(item.path);
      if (!canonical.ok) {
        return refuse(
          ctx,
          'invalid_path',
          `item ${i + 1}: ${canonical.reason}; nothing was requested`,
          { instance: args.instance, item: i + 1 },
          'paths are refused, never repaired: send plain relative paths like "Documents/report.odt"',
        );
      }
      const key = `${kind}\u0000${item.mode}\u0000${canonical.path}`;
      if (seen.has(key)) {
        return refuse(
          ctx,
          'invalid_arguments',
          `item ${i + 1} repeats an earlier item; list each path once; nothing was requested`,
          { instance: args.instance, item: i + 1 },
        );
      }
      seen.add(key);
      items.push({ kind, path: canonical.path, mode: item.mode });
    }
    if (!gateway.healthy()) {
      const envelope = await this.#deps.refusals.answer(
        {
          surface: ctx.surface,
          tool: ctx.tool,
          instance: args.instance,
          code: 'approval_unavailable',
          correlation_id: ctx.correlationId,
        },
        approvalUnavailable(),
      );
      return { ok: false, envelope };
    }

    // Security: the owner cannot be flooded; the count and the insert are one transaction.
    const created = grants.createRequestWithin(
      { instance: args.instance, reason: args.reason, items },
      this.#deps.maxPending,
    );
    if (!created.ok) {
      const envelope = await this.#deps.refusals.answer(
        {
          surface: ctx.surface,
          tool: ctx.tool,
          instance: args.instance,
          code: 'too_many_pending',
          pending: created.pending,
          correlation_id: ctx.correlationId,
        },
        tooManyPending(created.pending),
      );
      return { ok: false, envelope };
    }
    const record = created.request;
    try {
      await trail.append({
        event: 'request',
        surface: ctx.surface,
        tool: ctx.tool,
        request: record.id,
        instance: record.instance,
        reason: record.reason,
        items: record.items.map((it) => ({ n: it.n, kind: it.kind, path: it.path, mode: it.mode })),
        correlation_id: ctx.correlationId,
      });
    } catch (error) {
      // Security: an unaudited request must never become approvable.
      this.#withdraw(record.id, error);
      return {
        ok: false,
        envelope: refused('audit_unavailable', 'audit log unavailable; request refused', {
          retry: false,
        }),
      };
    }
    try {
      await gateway.postRequest(record);
    } catch (error) {
      this.#withdraw(record.id, error);
      await trail.bestEffort({
        event: 'decision',
        request: record.id,
        decision: 'deny',
        by: 'broker',
        reason: 'the approval channel could not deliver the request',
        correlation_id: ctx.correlationId,
      });
      return { ok: false, envelope: approvalUnavailable() };
    }
    return { ok: true, value: record, warnings: [] };
  }

  /** The agent's grants in force now, or the state of one request and its items. */
  status(args: { request?: number | undefined }): Outcome<AccessStatus> {
    if (args.request === undefined) {
      const grants = this.#deps.grants.activeGrants().map((g) => ({
        grant: g.id,
        request: g.requestId,
        instance: g.instance,
        kind: g.kind,
        path: g.path,
        mode: g.mode,
        expires_at: iso(g.expiresAt),
      }));
      const pending = this.#deps.grants.pendingRequests().map((r) => ({
        request: r.id,
        instance: r.instance,
        items: r.items.length,
      }));
      return { ok: true, value: { kind: 'grants', grants, pending }, warnings: [] };
    }
    const record = this.#deps.grants.getRequest(args.request);
    if (record === undefined) {
      return {
        ok: false,
        envelope: refused('unknown_request', `there is no request #${args.request}`, {
          hint: 'call check_access without arguments to see your active grants',
        }),
      };
    }
    return { ok: true, value: requestStatus(record, this.#deps.now()), warnings: [] };
  }

  /** When request `id` was made and last changed (its decision); undefined if there is none. */
  times(id: number): { createdAt: number; updatedAt: number } | undefined {
    const record = this.#deps.grants.getRequest(id);
    if (record === undefined) return undefined;
    return { createdAt: record.createdAt, updatedAt: record.decidedAt ?? record.createdAt };
  }

  #withdraw(id: number, error: unknown): void {
    this.#deps.logger.error('request withdrawn', { request: id, error: errorDetail(error) });
    this.#deps.grants.decide(id, { kind: 'deny', by: 'broker' });
  }
}

export interface ItemStatus {
  n: number;
  kind: Kind;
  path: string;
  mode: Mode;
  granted: boolean;
  grant?: number;
  /** What holds now: `expired` from the expiry instant on, even before the sweep marks it. */
  grant_state?: 'active' | 'expired' | 'revoked';
  expires_at?: string;
  /** When it ended: the revoke's instant, or the expiry's. */
  ended_at?: string;
  /** Who ended it: a revoke is always the owner's. */
  ended_by?: 'owner';
}

export type AccessStatus =
  | {
      kind: 'grants';
      grants: {
        grant: number;
        request: number;
        instance: string;
        path: string;
        mode: Mode;
        expires_at: string;
      }[];
      /** Requests still waiting for the owner. */
      pending: { request: number; instance: string; items: number }[];
    }
  | {
      kind: 'request';
      request: number;
      instance: string;
      state: RequestRecord['state'];
      items: ItemStatus[];
    };

function tooManyPending(waiting: readonly number[]) {
  const list = waiting.map((id) => `#${id}`).join(', ');
  return refused(
    'too_many_pending',
    `${waiting.length} of your requests already wait for the owner (${list}), the most the owner allows; nothing was requested: wait for the owner to decide them before asking again`,
    {
      hint: 'call check_access with each request number (or without arguments: it lists them) until the owner has decided; then ask again if you still need to',
      pending_requests: waiting,
    },
  );
}

function approvalUnavailable() {
  return failure('approval_unavailable', APPROVAL_UNAVAILABLE, true, {
    hint: 'try again later; grants you already have keep working',
  });
}

/** A grant as it holds at `now`: a grant past its expiry is expired even before the sweep. */
function grantNow(
  grant: GrantRecord,
  now: number,
): Omit<ItemStatus, 'n' | 'kind' | 'path' | 'mode'> {
  const expiresAt = iso(grant.expiresAt);
  const base = { granted: true, grant: grant.id, expires_at: expiresAt };
  if (grant.state === 'revoked') {
    return {
      ...base,
      grant_state: 'revoked',
      ended_at: iso(grant.endedAt ?? grant.expiresAt),
      ended_by: 'owner',
    };
  }
  if (grant.state === 'expired' || !(now < grant.expiresAt)) {
    return { ...base, grant_state: 'expired', ended_at: expiresAt };
  }
  return { ...base, grant_state: 'active' };
}

function requestStatus(record: RequestRecord, now: number): AccessStatus {
  const items = record.items.map((it): ItemStatus => ({
    n: it.n,
    kind: it.kind,
    path: it.path,
    mode: it.mode,
    ...(it.grant === null ? { granted: false } : grantNow(it.grant, now)),
  }));
  return {
    kind: 'request',
    request: record.id,
    instance: record.instance,
    state: record.state,
    items,
  };
}
