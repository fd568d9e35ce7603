/**
 * Records failed authentications without letting them flood the audit log.
 *
 * Security: every failure is an fsynced audit line, so an unauthenticated client could
 * otherwise turn the audit log into a disk and fsync amplifier. At most `perWindow`
 * failures are audited per window; the rest are counted and the count is written with
 * the next audited failure (`suppressed`), or, when none comes, by `flush` when the
 * broker stops (before its log closes): one line with `summary: true` that stands for no
 * attempt of its own, only its `suppressed` count. So no attempt goes unrecorded.
 */
import type { Clock } from '../../base/domain.js';
import type { AuthFailure, AuthRealm } from './bearer.js';

/** What a failed authentication's audit (and log) line says: never the token presented. */
export type AuthFailureFields = {
  readonly surface: AuthRealm;
  readonly reason: AuthFailure;
  readonly remote: string | null;
  readonly suppressed?: number;
  /** A line written only to carry `suppressed` (at a stop): no attempt of its own. */
  readonly summary?: true;
};

export interface AuthFailureDeps {
  now: Clock;
  /** Writes one audit line; resolves once it is written (or failed). */
  audit: (fields: AuthFailureFields) => Promise<unknown>;
  log: (fields: AuthFailureFields) => void;
  perWindow?: number;
  windowMs?: number;
}

export interface AuthFailureRecorder {
  /** One failed authentication. */
  (surface: AuthRealm, reason: AuthFailure, remote: string | undefined): void;
  /**
   * Writes the count of failures no line has carried yet (one `summary` line, as of the
   * last of them), and waits for every line already on its way. For a stop.
   */
  flush(): Promise<void>;
}

export function authFailureRecorder(deps: AuthFailureDeps): AuthFailureRecorder {
  const perWindow = deps.perWindow ?? 20;
  const windowMs = deps.windowMs ?? 60_000;
  let windowStart = Number.NEGATIVE_INFINITY;
  let recorded = 0;
  let suppressed = 0;
  let last: Omit<AuthFailureFields, 'suppressed'> | undefined;
  const writing = new Set<Promise<unknown>>();
  const write = (fields: AuthFailureFields): void => {
    const done = deps.audit(fields).finally(() => writing.delete(done));
    writing.add(done);
  };
  const record = (surface: AuthRealm, reason: AuthFailure, remote: string | undefined): void => {
    const now = deps.now();
    if (!(now - windowStart < windowMs)) {
      windowStart = now;
      recorded = 0;
    }
    last = { surface, reason, remote: remote ?? null };
    if (recorded >= perWindow) {
      suppressed += 1;
      return;
    }
    recorded += 1;
    const fields = { ...last, ...(suppressed > 0 ? { suppressed } : {}) };
    suppressed = 0;
    deps.log(fields);
    write(fields);
  };
  return Object.assign(record, {
    async flush(): Promise<void> {
      if (suppressed > 0 && last !== undefined) {
        // Security (of the record): counted attempts are written before the log closes.
        const fields: AuthFailureFields = { ...last, suppressed, summary: true };
        suppressed = 0;
        deps.log(fields);
        write(fields);
      }
      await Promise.all([...writing]);
    },
  });
}
