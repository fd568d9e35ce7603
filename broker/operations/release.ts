/**
 * What happens when grants end (revoked by the owner, or expired): every stream they
 * allow is aborted, their unused tickets are dropped, and the checkout locks they allowed
 * are released on Nextcloud (whose own lock expiry depends on its background jobs).
 */
import type { Logger } from '../base/log.js';
import type { Pipeline } from './pipeline.js';
import type { InFlight } from './in-flight.js';
import type { CheckoutTable } from './checkouts.js';
import type { TicketBook } from './tickets.js';

export interface ReleaseDeps {
  readonly pipeline: Pipeline;
  readonly inFlight: InFlight;
  readonly tickets: TicketBook;
  readonly checkouts: CheckoutTable;
  readonly logger: Logger;
  readonly correlationId: () => string;
}

export async function releaseEndedGrants(
  deps: ReleaseDeps,
  grants: readonly { readonly id: number }[],
  reason: 'revoked' | 'expired',
): Promise<void> {
  const ids = grants.map((g) => g.id);
  if (ids.length === 0) return;
  // Security: the revoke wins over anything in flight — streams stop mid-transfer.
  const aborted = deps.inFlight.abortGrants(ids);
  const dropped = deps.tickets.dropForGrants(ids);
  const locks = deps.checkouts.forGrants(ids);
  deps.logger.info('grants ended', {
    reason,
    grants: ids,
    aborted,
    tickets_dropped: dropped,
    locks: locks.length,
  });
  for (const checkout of locks) {
    deps.checkouts.remove(checkout.token);
    const ctx = {
      surface: 'transfer' as const,
      tool: 'release_lock',
      correlationId: deps.correlationId(),
    };
    const outcome = await deps.pipeline.runSystem(
      ctx,
      {
        instance: checkout.instance,
        path: checkout.path,
        grantIds: checkout.grantIds,
        reason: `grant ${reason}`,
      },
      (client) => client.unlock(checkout.path, checkout.token),
    );
    if (!outcome.ok) {
      deps.logger.warn('could not release a checkout lock; it expires with its LOCK timeout', {
        instance: checkout.instance,
        path: checkout.path,
        code: outcome.envelope.code,
        correlation_id: ctx.correlationId,
      });
    }
  }
}
