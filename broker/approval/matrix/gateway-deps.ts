/** What the Matrix gateway is built from, and what it reports after each event. */
import type { Clock } from '../../base/domain.js';
import type { Logger } from '../../base/log.js';
import type { MatrixConfig } from '../../config.js';
import type { ApprovalAudit } from '../ports.js';
import type { Reply } from '../reply.js';
import type { ApprovalEngine } from '../engine.js';
import type { Classified } from './classify.js';
import type { MatrixGatewayOptions } from './options.js';

/** What the gateway uses of the engine. */
export type MatrixEngine = Pick<
  ApprovalEngine,
  'handleText' | 'handleReaction' | 'undoApprovalReaction' | 'storeId' | 'database'
>;

/** Reported after each live event is handled (tests and the latency bench wait on it). */
export interface HandledEvent {
  readonly eventId: string;
  readonly kind:
    | Classified['kind']
    | 'unknown_target'
    | 'not_a_command'
    /** Encrypted room: not from a pinned device, not encrypted, or undecryptable. */
    | 'refused_device'
    /** Encrypted room: a message already counted, served again. */
    | 'refused_replay'
    /** Encrypted room: an edit (it decides nothing). */
    | 'refused_edit'
    /** Encrypted room: a vote bound to no poll of ours, or to another request's. */
    | 'refused_vote'
    /** Encrypted room: a reaction, answered with how to decide. */
    | 'reaction_refused';
  readonly reply?: Reply;
}

export interface MatrixGatewayDeps {
  config: {
    matrix: MatrixConfig | undefined;
    lifecycle: { pending_timeout: number; default_grant: number; max_grant: number };
  };
  engine: MatrixEngine;
  logger: Logger;
  now: Clock;
  /** When given, commands from people other than the approver are audited as `refused`. */
  audit?: ApprovalAudit;
  options?: MatrixGatewayOptions;
  onHandled?: (event: HandledEvent) => void;
  /** The data folder: the bot keeps its encryption identity there (encryption: required). */
  dataDir?: string;
  /** Randomness for the poll nonces (default: node:crypto's randomBytes). */
  randomBytes?: (size: number) => Uint8Array;
}
