/**
 * The encrypted approval room with pairing (broker/approval/pairing/): the e2ee rig of
 * support/matrix.ts with the phone not pinned, the approver's pins kept in the rig's data
 * folder, and the pairing desk on the rig's clock, with timers only the test fires. A
 * test plays the host's `broker pair` through `open` (the desk's own entry point, which
 * the owner socket uses too).
 */
import type {
  PairingDesk,
  PairingSession,
  PairingUpdate,
} from '../broker/approval/pairing/desk.js';
import { createPairing } from '../broker/approval/pairing/index.js';
import type { ApproverPins } from '../broker/approval/pairing/pins.js';
import { randomBytes } from 'node:crypto';
import { manualTimers, type ManualTimers } from './manual-timers.js';
import { e2eeRig, OWNER, type E2eeRig } from './matrix.js';
import { until } from './until.js';

export interface HostPairing {
  readonly session: PairingSession;
  /** Everything the host was told so far. */
  readonly updates: PairingUpdate[];
  /** Resolves with the first update of `stage` (waiting for it). */
  next(stage: PairingUpdate['stage']): Promise<PairingUpdate>;
}

export interface PairingRig {
  readonly rig: E2eeRig;
  readonly pins: ApproverPins;
  readonly desk: PairingDesk;
  readonly timers: ManualTimers;
  /** `broker pair` on the host (`expect`: `--expect DEVICE_ID`). */
  open(expect?: string): Promise<HostPairing>;
  close(): Promise<void>;
}

export async function pairingRig(): Promise<PairingRig> {
  const timers = manualTimers();
  let made: { pins: ApproverPins; desk: PairingDesk } | undefined;
  const rig = await e2eeRig({
    pinPhone: false,
    pairing: (core, dataDir) => {
      const pairing = createPairing(
        {
          approval: 'matrix',
          data_dir: dataDir,
          matrix: {
            homeserver: 'unused',
            bot_user: 'unused',
            bot_token: 'unused',
            room_id: 'unused',
            approver: OWNER,
            encryption: 'required',
            approver_devices: [],
          },
        },
        { audit: core.audit, now: () => core.clock.now, logger: core.logger, randomBytes, timers },
      );
      if (pairing === undefined) throw new Error('no pairing for an encrypted room');
      made = pairing;
      return pairing;
    },
  });
  if (made === undefined) throw new Error('the rig made no pairing');
  const { pins, desk } = made;
  return {
    rig,
    pins,
    desk,
    timers,
    open: async (expect) => {
      const updates: PairingUpdate[] = [];
      const opened = await desk.open(expect, (u) => updates.push(u));
      if (!opened.ok) throw new Error(opened.message);
      return {
        session: opened.session,
        updates,
        next: async (stage) => {
          await until(`the host is told ${stage}`, () => updates.some((u) => u.stage === stage));
          const found = updates.find((u) => u.stage === stage);
          if (found === undefined) throw new Error('unreachable');
          return found;
        },
      };
    },
    close: () => rig.close(),
  };
}
