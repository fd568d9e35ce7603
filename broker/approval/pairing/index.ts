/**
 * Pairing's parts for a broker whose approval room is encrypted
 * (`matrix.encryption: required`): the approver's pins (the configuration's and those
 * kept in data_dir) and the desk that runs `broker pair`. None otherwise: a clear-text
 * room and the console have no devices to pin.
 */
import type { Clock } from '../../base/domain.js';
import type { Logger } from '../../base/log.js';
import type { BrokerConfig } from '../../config.js';
import type { Timers } from '../../operations/timers.js';
import type { ApprovalAudit } from '../ports.js';
import { PairingDesk } from './desk.js';
import { ApproverPins } from './pins.js';

export interface Pairing {
  readonly pins: ApproverPins;
  readonly desk: PairingDesk;
}

export interface PairingParts {
  readonly audit: ApprovalAudit;
  readonly now: Clock;
  readonly logger: Logger;
  readonly randomBytes: (size: number) => Uint8Array;
  readonly timers: Pick<Timers, 'setTimeout' | 'clearTimeout'>;
}

/** Throws PinFileError when data_dir's pin file cannot be used (the broker does not start). */
export function createPairing(
  config: Pick<BrokerConfig, 'approval' | 'matrix' | 'data_dir'>,
  parts: PairingParts,
): Pairing | undefined {
  const m = config.matrix;
  if (config.approval !== 'matrix' || m === undefined || m.encryption !== 'required') {
    return undefined;
  }
  const pins = ApproverPins.open({
    config: m.approver_devices ?? [],
    dataDir: config.data_dir,
    audit: parts.audit,
    now: parts.now,
    logger: parts.logger,
  });
  const desk = new PairingDesk({ approver: m.approver, pins, ...parts });
  return { pins, desk };
}
