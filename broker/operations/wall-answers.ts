/**
 * How the wall's refusals are answered, and the answers for an operation refused or
 * stopped because its grant ended: one vocabulary on both surfaces and the blob
 * endpoint. `grant_revoked` (by the owner) or `grant_expired`, with when (`ended_at`),
 * who (`ended_by: "owner"` for a revoke) and which grant; `no_grant` stays for paths no
 * grant ever covered (the wall decides).
 */
import type { RefusalFields } from '../audit/events.js';
import type { EndedGrantView, GrantView } from '../base/domain.js';
import { refused, type Envelope, type EnvelopeCode } from '../base/envelope.js';
import { iso } from '../base/time.js';
import { endedReason, type GrantEnding, type WallDecision } from '../wall.js';
import type { GrantEnd } from './in-flight.js';

/** The envelope fields that say how a grant ended. */
export function endedFields(end: GrantEnd & { grant?: number; request?: number }): {
  grant?: number;
  request?: number;
  ended_at: string;
  ended_by?: 'owner';
} {
  return {
    ...(end.grant === undefined ? {} : { grant: end.grant }),
    ...(end.request === undefined ? {} : { request: end.request }),
    ended_at: iso(end.at),
    ...(end.state === 'revoked' ? { ended_by: 'owner' as const } : {}),
  };
}

export function endedCode(end: GrantEnd): Extract<EnvelopeCode, 'grant_revoked' | 'grant_expired'> {
  return end.state === 'revoked' ? 'grant_revoked' : 'grant_expired';
}

/** What to do after a grant ended, for the agent (who has request_access). */
export const ENDED_HINTS = {
  grant_revoked:
    'the owner revoked this grant: call request_access again only if you still need it, and say why',
  grant_expired: 'grants never renew: call request_access again if you still need it',
} as const;

/** How `ended` is worded at the end of a message: "revoked by the owner at T" / "expired at T". */
function endedWords(end: GrantEnd): string {
  return end.state === 'revoked'
    ? `was revoked by the owner at ${iso(end.at)}`
    : `expired at ${iso(end.at)}`;
}

/** A wall refusal that names an ended grant, as an envelope. */
export function endedRefusal(reason: string, ending: GrantEnding): Envelope {
  const code = endedCode(ending);
  return refused(code, reason, {
    hint: ENDED_HINTS[code],
    ...endedFields(ending),
  });
}

/** An operation stopped mid-way because a grant it relied on ended. */
export function cutRefusal(grantIds: readonly number[], end: GrantEnd): Envelope {
  const code = endedCode(end);
  return refused(
    code,
    `the grant allowing this operation ${endedWords(end)} while it ran; it was stopped`,
    { hint: ENDED_HINTS[code], ...endedFields({ ...end, grant: grantIds[0] }) },
  );
}

/**
 * The first of `ids` that is not in force at `now`, as an ending: an unended grant past
 * its expiry expired at its expiry; an ended one as recorded. Undefined when all are in
 * force (or when a grant is unknown, which the store never produces: the caller then
 * refuses without naming an ending).
 */
export function endingOfGrants(
  ids: readonly number[],
  snapshot: { readonly unended: readonly GrantView[]; readonly ended: readonly EndedGrantView[] },
  now: number,
): GrantEnding | undefined {
  for (const id of ids) {
    const unended = snapshot.unended.find((g) => g.id === id);
    if (unended !== undefined) {
      if (now < unended.expiresAt) continue;
      return { ...asEnding(unended), state: 'expired', at: unended.expiresAt };
    }
    const ended = snapshot.ended.find((g) => g.id === id);
    if (ended === undefined) return undefined;
    return {
      ...asEnding(ended),
      state: ended.state,
      at: ended.state === 'revoked' ? ended.endedAt : ended.expiresAt,
    };
  }
  return undefined;
}

function asEnding(g: GrantView): Omit<GrantEnding, 'state' | 'at'> {
  return { grant: g.id, request: g.requestId, path: g.path, mode: g.mode };
}

/**
 * The refusal when a grant ended between the wall's decision and the call (or a ticket's
 * grant ended before its redemption): named as the wall names it.
 */
export function endedMeanwhile(
  ending: GrantEnding | undefined,
  instance: string,
  path: string,
): Envelope {
  if (ending === undefined) {
    return refused(
      'no_grant',
      'the grant this operation relied on no longer exists; nothing was done',
      { hint: 'call request_access if you still need access' },
    );
  }
  return endedRefusal(endedReason(ending, instance, path), ending);
}

export type WallRefusal = Extract<WallDecision, { ok: false }>;

const HINTS: Record<WallRefusal['code'], string> = {
  invalid_path:
    'paths are refused, never repaired: send a plain relative path like "Documents/report.odt"',
  unknown_instance: 'call list_instances for the configured names',
  no_grant: 'call request_access with this path and the mode you need, then wait for the owner',
  ...ENDED_HINTS,
  same_path: 'choose a destination that differs from the source',
};

/** The envelope for a wall refusal: its code, reason and hint, and how a grant ended. */
export function wallRefusal(decision: WallRefusal): Envelope {
  if (decision.ended !== undefined) return endedRefusal(decision.reason, decision.ended);
  return refused(decision.code, decision.reason, { hint: HINTS[decision.code] });
}

/** The audit fields of a refusal envelope: its code and reason, and an ended grant's facts. */
export function refusalFields(
  envelope: Envelope,
): Pick<RefusalFields, 'reason' | 'grant' | 'ended_at' | 'ended_by'> & { code?: string } {
  const { code, message, grant, ended_at, ended_by } = envelope;
  return { code, reason: message, grant, ended_at, ended_by };
}
