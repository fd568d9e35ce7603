/**
 * Records failed authentications without letting them flood the audit log.
 *
 * Security: every failure is an fsynced audit line, so an unauthenticated client could
 * otherwise turn the audit log into a disk and fsync amplifier. At most `perWindow`
 * failures are audited per window; the rest are counted and the count is written with
 * the next audited failure (`suppressed`), so no attempt goes unrecorded.
 */
import type { Clock } from '../../base/domain.js';
import type { AuthFailure, AuthRealm } from './bearer.js';

/** What a failed authentication's audit (and log) line says: never the token presented. */
export type AuthFailureFields = {
  readonly surface: AuthRealm;
  readonly reason: AuthFailure;
  readonly remote: string | null;
  readonly suppressed?: number;
};

export interface AuthFailureDeps {
  now: Clock;
  audit: (fields: AuthFailureFields) => void;
  log: (fields: AuthFailureFields) => void;
  perWindow?: number;
  windowMs?: number;
}

export function authFailureRecorder(
  deps: AuthFailureDeps,
): (surface: AuthRealm, reason: AuthFailure, remote: string | undefined) => void {
  const perWindow = deps.perWindow ?? 20;
  const windowMs = deps.windowMs ?? 60_000;
  let windowStart = Number.NEGATIVE_INFINITY;
  let recorded = 0;
  let suppressed = 0;
  return (surface, reason, remote) => {
    const now = deps.now();
    if (!(now - windowStart < windowMs)) {
      windowStart = now;
      recorded = 0;
    }
    if (recorded >= perWindow) {
      suppressed += 1;
      return;
    }
    recorded += 1;
    const fields = {
      surface,
      reason,
      remote: remote ?? null,
      ...(suppressed > 0 ? { suppressed } : {}),
    };
    suppressed = 0;
    deps.log(fields);
    deps.audit(fields);
  };
}
