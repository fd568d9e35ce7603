/**
 * What happens when grants end (revoked by the owner, or expired): every operation they
 * allow is aborted, their unused tickets are dropped, and the checkout locks they allowed
 * are released on Nextcloud (whose own lock expiry depends on its background jobs); a
 * release that fails is retried until Nextcloud confirms it (checkouts.ts).
 */
import type { Logger } from '../base/log.js';
import type { Checkouts } from './checkouts.js';
import type { InFlight } from './in-flight.js';
import type { TicketBook } from './tickets.js';

export interface ReleaseDeps {
  readonly inFlight: InFlight;
  readonly tickets: TicketBook;
  readonly checkouts: Checkouts;
  readonly logger: Logger;
}

/** What release needs of an ended grant. */
export interface EndedGrant {
  readonly id: number;
  readonly endedAt: number | null;
  readonly expiresAt: number;
}

export async function releaseEndedGrants(
  deps: ReleaseDeps,
  grants: readonly EndedGrant[],
  reason: 'revoked' | 'expired',
): Promise<void> {
  const ids = grants.map((g) => g.id);
  if (ids.length === 0) return;
  // Security: the revoke wins over anything in flight — streams stop mid-transfer, and
  // each is told how its grant ended (revoked at the revoke, expired at the expiry).
  let aborted = 0;
  for (const g of grants) {
    const at = reason === 'revoked' ? (g.endedAt ?? g.expiresAt) : g.expiresAt;
    aborted += deps.inFlight.abortGrants([g.id], { state: reason, at });
  }
  const dropped = deps.tickets.dropForGrants(ids);
  const locks = await deps.checkouts.releaseForGrants(ids, reason);
  deps.logger.info('grants ended', {
    reason,
    grants: ids,
    aborted,
    tickets_dropped: dropped,
    locks,
  });
}
