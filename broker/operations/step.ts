/**
 * What a verb hands the pipeline and gets back: the step it runs on Nextcloud, what the
 * wall allowed that step, the options of a run, and the outcome. A step refuses on
 * purpose by throwing an `OperationRefusal` with a vetted envelope.
 */
import type { IntentDetail, OutcomeDetail } from '../audit/events.js';
import { CodedError } from '../base/coded-error.js';
import type { Envelope, EnvelopeCode } from '../base/envelope.js';
import type { WallDecision, WallOp } from '../wall.js';
import { GrantEndedError } from './in-flight.js';
import type { NextcloudPort } from './ports.js';
import type { JsonObject } from '../base/protocol.js';

/** What the wall allowed, handed to a step. */
export interface Allowed {
  readonly instance: string;
  /** Canonical paths: `[path]`, or `[from, to]` for a move; '' = a discovery list of the root. */
  readonly paths: readonly string[];
  readonly grantIds: readonly number[];
  readonly discovery: boolean;
  /** The earliest expiry among `grantIds` (ms), undefined when there are none. */
  readonly expiresAt: number | undefined;
  /** Aborted when a grant this operation relies on is revoked or expires. */
  readonly signal: AbortSignal;
  /**
   * The pipeline's check again, now: the wall still allows the same paths and every
   * grant (the ticket's too) is in force. Throws a GrantEndedError otherwise. A step
   * calls it right before a commit that cannot be taken back (an upload's MOVE).
   */
  recheck(): void;
}

export type Step<T> = (client: NextcloudPort, allowed: Allowed) => Promise<T>;

/** A verb's result: its value (and warnings to pass on), or the envelope that refuses it. */
export type Outcome<T> =
  { ok: true; value: T; warnings: string[] } | { ok: false; envelope: Envelope };

/** The wall's decision for a query that touches nothing, with the grants' earliest expiry. */
export type Checked =
  | (Extract<WallDecision, { ok: true }> & { expiresAt: number | undefined })
  | Extract<WallDecision, { ok: false }>;

export interface RunOptions<T> {
  /** Grants a ticket is bound to: each must still be active, besides the wall's own. */
  readonly boundGrants?: readonly number[];
  /** Extra fields for the intent line (never content, never a secret). */
  readonly intent?: IntentDetail;
  /** Audit fields describing a successful value (never content, never a secret). */
  readonly describe?: (value: T) => OutcomeDetail;
  /**
   * The step changes nothing on Nextcloud (it reads, or only prepares a ticket): its
   * outcome line is answered once written, its fsync following (AuditSink.appendWritten).
   * Default: true for the read-only operations (readOnly below), false otherwise.
   */
  readonly changesNothing?: boolean;
}

/**
 * Whether a wall operation only reads: its outcome line need not be durable before the
 * answer (the intent before it is: docs/contracts.md, "Durability").
 */
export function readOnly(op: WallOp): boolean {
  switch (op.op) {
    case 'list':
    case 'search':
    case 'read':
    case 'collections':
      return true;
    case 'collection':
      return op.access === 'read';
    default:
      return false;
  }
}

export const AUDIT_UNAVAILABLE = 'audit log unavailable; operation refused';

/** How the grant ended, when an abort was a grant ending. */
export function endOf(reason: unknown): GrantEndedError['end']['state'] | undefined {
  return reason instanceof GrantEndedError ? reason.end.state : undefined;
}

/** A step's deliberate refusal with a vetted envelope (e.g. "not a file"); its code is the envelope's. */
export class OperationRefusal extends CodedError<EnvelopeCode> {
  override readonly name = 'OperationRefusal';
  constructor(
    readonly envelope: Envelope,
    /** Set when the refusal is a grant that ended under the operation (audited as `cause`). */
    readonly ended?: GrantEndedError['end']['state'],
    /** Fields for the operation's outcome line: what the step changed before it refused. */
    readonly audit?: Readonly<JsonObject>,
  ) {
    super(envelope.code ?? 'internal', envelope.message);
  }
}
