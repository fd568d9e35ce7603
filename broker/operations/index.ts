/**
 * The operations of one daemon, built once around one pipeline: the verbs the surfaces
 * call, and the one thing the approval plane calls back (`endGrants`, when the owner
 * revokes). Everything here shares the pipeline's grants, tickets, checkouts and
 * operations in flight; nothing here holds an HTTP request or a chat event.
 */
import { randomUUID } from 'node:crypto';
import type { Clock, GrantRecord } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { AuditTrail } from './audit-trail.js';
import { BlobTransfers } from './blobs.js';
import { Checkouts } from './checkouts.js';
import { CollectionOperations } from './collections.js';
import { FileOperations } from './files.js';
import { InFlight } from './in-flight.js';
import { Pipeline } from './pipeline.js';
import type { AuditSink } from '../audit/sink.js';
import type { CheckoutLocksPort, GrantsPort, NextcloudPort } from './ports.js';
import type { RefusalBudgetOptions } from './refusal-budget.js';
import { Refusals } from './refusals.js';
import type { Retention } from '../config/retention.js';
import { SpaceGuard } from './space-guard.js';
import { releaseEndedGrants } from './release.js';
import { TicketBook } from './tickets.js';
import type { Timers } from './timers.js';
import { TransferService } from './transfer.js';
import type { HistoryRead } from '../audit/history.js';
import type { AuditRecord } from '../audit/record.js';
import { UndoService } from './undo/service.js';

export interface OperationsDeps {
  readonly grants: GrantsPort;
  /** The checkout locks, kept beside the grants (grants/checkout-locks.ts). */
  readonly checkoutLocks: CheckoutLocksPort;
  readonly audit: AuditSink;
  /** Per-instance policy from the owner's config. */
  readonly instances: ReadonlyMap<
    string,
    { readonly discovery: boolean; readonly retention?: Retention | undefined }
  >;
  /** One Nextcloud client per configured instance, by name. */
  readonly clients: ReadonlyMap<string, NextcloudPort>;
  readonly logger: Logger;
  /** Removes every configured secret from a text. */
  readonly scrub: (text: string) => string;
  readonly now: Clock;
  /** Each operation's timer at the expiry of its grants. */
  readonly timers: Pick<Timers, 'setTimeout' | 'clearTimeout'>;
  readonly correlationId?: () => string;
  readonly randomBytes?: (n: number) => Buffer;
  /** Refused calls each surface may make (default DEFAULT_REFUSAL_BUDGET). */
  readonly refusalBudget?: RefusalBudgetOptions;
  /** Reads the audit log back, for undo (audit/history.ts); without it undo reads nothing. */
  readonly history?: (onRecord: (record: AuditRecord) => void) => Promise<HistoryRead>;
}

export interface Operations {
  readonly pipeline: Pipeline;
  readonly trail: AuditTrail;
  /** Every refused call: rate-limited per surface, audited with repeats summarised. */
  readonly refusals: Refusals;
  readonly files: FileOperations;
  /** Calendars and address books. */
  readonly collections: CollectionOperations;
  readonly transfer: TransferService;
  readonly blobs: BlobTransfers;
  /** Operations currently running (aborted when their grants end). */
  readonly inFlight: InFlight;
  /** Ends what these grants still allow: running streams, unused tickets, checkout locks. */
  endGrants(grants: readonly GrantRecord[], reason: 'revoked' | 'expired'): Promise<void>;
  /** One attempt at every checkout lock release that is due (the sweep, and on start). */
  releaseDueLocks(): Promise<void>;
  /** The owner takes back what operations changed (undo/service.ts). */
  readonly undo: UndoService;
}

export function createOperations(deps: OperationsDeps): Operations {
  const { logger, now } = deps;
  const correlationId = deps.correlationId ?? randomUUID;
  const inFlight = new InFlight({ now, timers: deps.timers });
  const trail = new AuditTrail({ audit: deps.audit, scrub: deps.scrub, logger });
  const refusals = new Refusals({
    now,
    write: (event) => trail.bestEffort(event),
    ...(deps.refusalBudget === undefined ? {} : { budget: deps.refusalBudget }),
  });
  const pipeline = new Pipeline({
    grants: deps.grants,
    audit: deps.audit,
    instances: deps.instances,
    clients: deps.clients,
    inFlight,
    refusals,
    logger,
    scrub: deps.scrub,
    now,
  });
  const tickets = new TicketBook({
    now,
    ...(deps.randomBytes ? { randomBytes: deps.randomBytes } : {}),
  });
  const checkouts = new Checkouts({
    pipeline,
    locks: deps.checkoutLocks,
    instances: deps.clients,
    logger,
    now,
    correlationId,
  });
  // One guard for every write: its ledger judges concurrent writes together.
  const space = new SpaceGuard({
    now,
    retention: new Map([...deps.instances].map(([name, inst]) => [name, inst.retention])),
  });
  return {
    pipeline,
    trail,
    refusals,
    inFlight,
    files: new FileOperations(pipeline, space),
    collections: new CollectionOperations(pipeline),
    transfer: new TransferService({ pipeline, tickets, checkouts, logger, now, space }),
    blobs: new BlobTransfers({ pipeline, tickets, checkouts, space }),
    undo: new UndoService({
      pipeline,
      trail,
      space,
      locks: {
        lock: (id) => checkouts.lock(id),
        release: (id) => checkouts.releaseForUndo(id),
      },
      grants: deps.grants,
      history: deps.history ?? (() => Promise.resolve({ ok: true, records: 0 })),
      instances: deps.clients,
      correlationId,
      logger,
    }),
    endGrants: (grants, reason) =>
      releaseEndedGrants({ inFlight, tickets, checkouts, logger }, grants, reason),
    releaseDueLocks: () => checkouts.releaseDue(),
  };
}
