/**
 * The approval plane's parts (assemble.ts builds them in order): the audit anchor, the
 * approval engine that writes through it, and the gateway of config.approval.
 */
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ConsoleGateway } from '../approval/console.js';
import { ApprovalEngine } from '../approval/engine.js';
import type { ApprovalGateway } from '../approval/gateway.js';
import { OWNER_SOCKET_FILE } from '../approval/owner/protocol.js';
import type { Pairing } from '../approval/pairing/index.js';
import { CLEAR_TEXT_NOTICE } from '../approval/views.js';
import { AuditAnchor, type AnchorTimers } from '../audit/anchor.js';
import type { AuditLog } from '../audit/index.js';
import type { Clock } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import type { BrokerConfig } from '../config.js';
import type { GrantStore } from '../grants/index.js';
import type { Operations } from '../operations/index.js';
import { timingDecisions, type BrokerMetrics } from '../surfaces/metrics.js';

/** What a gateway factory gets besides the engine. */
export interface GatewayParts {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly now: Clock;
}

/** Where the approval console runs (approval: console). */
export interface ConsoleTerminal {
  readonly input: Readable;
  readonly output: Writable;
  /** Both are a terminal (default true); if not, the console runs headless. */
  readonly interactive?: boolean;
  /** `quit`, or Ctrl-D on a terminal: the owner asks the broker to stop. */
  readonly onQuit?: (why: string) => void;
}

export async function defaultGateway(
  engine: ApprovalEngine,
  { config, logger, audit, now }: GatewayParts,
  terminal: ConsoleTerminal | undefined,
  pairing: Pairing | undefined,
): Promise<ApprovalGateway> {
  if (config.approval === 'console') {
    if (terminal === undefined) throw new Error('approval: console needs a terminal');
    return new ConsoleGateway({
      input: terminal.input,
      output: terminal.output,
      engine,
      now,
      lifecycle: config.lifecycle,
      logger,
      ownerSocket: join(config.data_dir, OWNER_SOCKET_FILE),
      ...(terminal.interactive === undefined ? {} : { interactive: terminal.interactive }),
      ...(terminal.onQuit === undefined ? {} : { onQuit: terminal.onQuit }),
    });
  }
  // Loaded only when used: matrix-js-sdk is a third of the idle memory.
  const { MatrixGateway } = await import('../approval/matrix/gateway.js');
  return new MatrixGateway({
    config,
    engine,
    logger,
    now,
    audit,
    dataDir: config.data_dir,
    ...(pairing === undefined ? {} : { pairing }),
  });
}

/** The head goes to the room after each owner decision and on the interval. */
export function auditAnchor(
  config: BrokerConfig,
  timers: AnchorTimers | undefined,
  audit: AuditLog,
  logger: Logger,
): AuditAnchor {
  return new AuditAnchor({
    head: () => audit.head,
    intervalMs: config.audit.anchor_interval,
    logger,
    ...(timers === undefined ? {} : { timers }),
  });
}

/** The approval engine: its audit posts the head after each decision and times it. */
export function approvalEngine(parts: {
  config: BrokerConfig;
  store: GrantStore;
  audit: AuditLog;
  anchor: AuditAnchor;
  metrics: BrokerMetrics;
  operations: Operations;
  logger: Logger;
  now: Clock;
}): ApprovalEngine {
  const { config, store, anchor, operations } = parts;
  return new ApprovalEngine({
    config,
    store,
    audit: timingDecisions(
      anchor.postingAfter(parts.audit),
      (id) => store.getRequest(id),
      parts.metrics,
    ),
    batch: (command) => anchor.batch(command),
    now: parts.now,
    logger: parts.logger,
    onRevoked: (grants) => operations.endGrants(grants, 'revoked'),
    undo: (command) => operations.undo.undo(command),
    channel: config.approval,
    encrypted: config.approval === 'matrix' && config.matrix?.encryption === 'required',
    // Security: in a clear-text room every `status` reminds the owner that a decision
    // there proves only that the homeserver passed an event on as the approver's.
    ...(config.approval === 'matrix' && (config.matrix?.encryption ?? 'off') === 'off'
      ? { statusNotice: CLEAR_TEXT_NOTICE }
      : {}),
  });
}
