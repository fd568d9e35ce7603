/**
 * Pairing (docs/contracts.md §6, `broker pair`): the owner pins the device they decide
 * from without copying keys. `broker pair` on the broker's host opens a pairing and
 * prints its one-time code (code.ts); the owner types `pair CODE` in the encrypted room
 * from that device; the broker shows, on the host, the session id and key of the device
 * that sent it, and pins it only when the owner confirms there (or named it in advance
 * with `--expect`). One pairing at a time; it ends with its command.
 *
 * Security: every session of the owner's account may be able to read the message with
 * the code, and the homeserver decides which copy arrives first, so the code alone pins
 * nothing: what pins is the owner on the host comparing what is shown with the device in
 * their hand. A message with the code is judged as a decision is (encrypted, the
 * approver's own words, not an edit, counted once: encrypted-decisions.ts) except that
 * its device is not pinned yet. A code is used once; when a second device sends it
 * before the pin, nothing is pinned and the owner is told; a code is never posted,
 * logged or audited.
 */
import type { Clock } from '../../base/domain.js';
import { errorLine } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { Timers } from '../../operations/timers.js';
import type { PairingOutcome as ProtocolOutcome } from '../owner/protocol.js';
import type { ApprovalAudit } from '../ports.js';
import type { Reply } from '../reply.js';
import { isPairCode, newPairCode, PAIR_CODE_VALID_MS, PAIR_CONFIRM_MS } from './code.js';
import { BoundedSet } from '../matrix/bounded-set.js';
import type { ApproverPins } from './pins.js';
import { claimReply, type ClaimOutcome } from './texts.js';

/** The device a `pair CODE` message came from, as the crypto layer identified it. */
export interface PairingDevice {
  readonly deviceId: string;
  readonly ed25519: string;
  /** The display name its session chose (anyone's to set: shown, never trusted). */
  readonly name?: string | undefined;
}

/** How a pairing ended (`busy` is the socket's answer when one is running already). */
export type PairingOutcome = Exclude<ProtocolOutcome, 'busy'>;

/** What the host's `broker pair` is told while it waits. */
export type PairingUpdate =
  | { readonly stage: 'wrong_code'; readonly device: PairingDevice }
  | { readonly stage: 'claimed'; readonly device: PairingDevice; readonly confirmBy: number }
  | {
      readonly stage: 'ended';
      readonly outcome: PairingOutcome;
      readonly devices: readonly PairingDevice[];
      readonly message?: string | undefined;
    };

export interface PairingSession {
  readonly id: string;
  readonly code: string;
  readonly expiresAt: number;
  /** The owner's answer at the host's prompt. */
  confirm(pin: boolean): Promise<void>;
  /** `broker pair` went away: the code stops working. */
  cancel(): Promise<void>;
}

export interface PairingDeskDeps {
  readonly approver: string;
  readonly pins: Pick<ApproverPins, 'find' | 'pin'>;
  readonly audit: ApprovalAudit;
  readonly now: Clock;
  readonly randomBytes: (size: number) => Uint8Array;
  readonly timers: Pick<Timers, 'setTimeout' | 'clearTimeout'>;
  readonly logger: Logger;
}

interface Active {
  readonly id: string;
  readonly code: string;
  readonly expiresAt: number;
  readonly expect: string | undefined;
  readonly tell: (update: PairingUpdate) => void;
  claimant?: PairingDevice & { readonly eventId: string };
  confirmBy?: number;
  timer?: unknown;
}

/** Codes of ended pairings, kept to answer a late use as "used" (the newest few). */
const SPENT_KEPT = 8;
/** Outcomes a session can cause again and again; the room hears of each once. */
const REPEATABLE: ReadonlySet<ClaimOutcome> = new Set([
  'wrong_code',
  'no_pairing',
  'used',
  'repeated',
]);
/** How many such notices are remembered (the oldest forgotten first). */
const TOLD_KEPT = 1000;

export class PairingDesk {
  #active: Active | undefined;
  readonly #spent: { code: string; pinned: string | undefined }[] = [];
  readonly #told = new BoundedSet(TOLD_KEPT);
  #queue: Promise<unknown> = Promise.resolve();
  readonly #deps: PairingDeskDeps;

  constructor(deps: PairingDeskDeps) {
    this.#deps = deps;
  }

  /** Opens a pairing, or says why not (one at a time). `tell` hears how it goes. */
  open(
    expect: string | undefined,
    tell: (update: PairingUpdate) => void,
  ): Promise<{ ok: true; session: PairingSession } | { ok: false; message: string }> {
    return this.#serially(async () => {
      if (this.#active !== undefined) {
        return {
          ok: false as const,
          message: 'another "broker pair" is waiting; finish it (or stop it with Ctrl-C) first',
        };
      }
      const random = this.#deps.randomBytes;
      const active: Active = {
        id: Buffer.from(random(8)).toString('hex'),
        code: newPairCode(random),
        expiresAt: this.#deps.now() + PAIR_CODE_VALID_MS,
        expect,
        tell,
      };
      this.#active = active;
      this.#arm(active, PAIR_CODE_VALID_MS);
      await this.#record({
        action: 'started',
        pairing: active.id,
        ...(expect === undefined ? {} : { expect }),
      });
      const session: PairingSession = {
        id: active.id,
        code: active.code,
        expiresAt: active.expiresAt,
        confirm: (pin) => this.#serially(() => this.#confirm(active, pin)),
        cancel: () => this.#serially(() => this.#end(active, 'cancelled', [])),
      };
      return { ok: true as const, session };
    });
  }

  /**
   * A `pair CODE` message of the approver's, from `device` (identified, not pinned).
   * Answers what the room is told (undefined: nothing more than the pin's confirmation).
   */
  claim(
    typed: string,
    device: PairingDevice,
    eventId: string,
  ): Promise<{ outcome: ClaimOutcome; reply: Reply | undefined }> {
    return this.#serially(async () => {
      const pairing = this.#active?.id;
      const { outcome, other } = await this.#judge(typed, device, eventId);
      await this.#record({
        action: 'claim',
        actor: this.#deps.approver,
        outcome,
        device_id: device.deviceId,
        ed25519: device.ed25519,
        event_id: eventId,
        ...(pairing === undefined ? {} : { pairing }),
      });
      // Security: what an agent's session can repeat at will is told once per pairing
      // and session, as refusals are (e2ee/refused-decisions.ts); each is audited.
      const repeatable = REPEATABLE.has(outcome);
      const told =
        repeatable && !this.#told.add([outcome, device.deviceId, pairing ?? '-'].join('\u0000'));
      return { outcome, reply: told ? undefined : claimReply(outcome, device.deviceId, other) };
    });
  }

  async #judge(
    typed: string,
    device: PairingDevice,
    eventId: string,
  ): Promise<{ outcome: ClaimOutcome; other?: string | undefined }> {
    const active = this.#active;
    if (active === undefined || !isPairCode(typed, active.code)) {
      const spent = this.#spent.find((s) => isPairCode(typed, s.code));
      if (spent !== undefined) return { outcome: 'used', other: spent.pinned };
      if (active === undefined) return { outcome: 'no_pairing' };
      active.tell({ stage: 'wrong_code', device });
      return { outcome: 'wrong_code' };
    }
    const devices = [device];
    if (this.#deps.now() >= active.expiresAt && active.claimant === undefined) {
      await this.#end(active, 'expired', devices);
      return { outcome: 'expired' };
    }
    const first = active.claimant;
    if (first !== undefined) {
      if (first.deviceId === device.deviceId && first.ed25519 === device.ed25519) {
        return { outcome: 'repeated' };
      }
      // Security: two devices with one code: one of them read it off the other; the
      // owner cannot tell from here which copy is theirs, so neither is pinned.
      await this.#end(active, 'several_devices', [first, device]);
      return { outcome: 'several_devices', other: first.deviceId };
    }
    if (this.#deps.pins.find(device.deviceId) !== undefined) {
      await this.#end(active, 'already_pinned', devices);
      return { outcome: 'already_pinned' };
    }
    if (active.expect !== undefined) {
      // Security: --expect is the owner's confirmation given in advance, for that device
      // only; any other device with the code means it leaked, and ends the pairing.
      if (active.expect !== device.deviceId) {
        await this.#end(active, 'not_expected', devices);
        return { outcome: 'not_expected', other: active.expect };
      }
      const pinned = await this.#pin(active, { ...device, eventId }, 'expect');
      return { outcome: pinned ? 'pinned' : 'failed' };
    }
    active.claimant = { ...device, eventId };
    active.confirmBy = this.#deps.now() + PAIR_CONFIRM_MS;
    this.#arm(active, PAIR_CONFIRM_MS);
    active.tell({ stage: 'claimed', device, confirmBy: active.confirmBy });
    return { outcome: 'claimed' };
  }

  async #confirm(active: Active, pin: boolean): Promise<void> {
    const claimant = active.claimant;
    if (this.#active !== active || claimant === undefined) return;
    if (active.confirmBy !== undefined && this.#deps.now() >= active.confirmBy) {
      await this.#end(active, 'expired', [claimant]);
    } else if (pin) await this.#pin(active, claimant, 'host');
    else await this.#end(active, 'declined', [claimant]);
  }

  async #pin(
    active: Active,
    device: PairingDevice & { readonly eventId: string },
    confirmed: 'host' | 'expect',
  ): Promise<boolean> {
    const result = await this.#deps.pins.pin(device, confirmed, {
      actor: 'socket',
      fields: { pairing: active.id, event_id: device.eventId },
    });
    if (result.ok) {
      this.#finish(active, device.deviceId);
      active.tell({ stage: 'ended', outcome: 'pinned', devices: [device] });
      return true;
    }
    await this.#end(active, 'failed', [device], result.message);
    return false;
  }

  /** Ends `active` without a pin (audited), telling the host why. */
  async #end(
    active: Active,
    outcome: Exclude<PairingOutcome, 'pinned'>,
    devices: readonly PairingDevice[],
    message?: string,
  ): Promise<void> {
    if (this.#active !== active) return;
    this.#finish(active, undefined);
    await this.#record({
      action: 'ended',
      pairing: active.id,
      outcome,
      ...(devices.length === 0 ? {} : { devices: devices.map((d) => d.deviceId) }),
    });
    active.tell({
      stage: 'ended',
      outcome,
      devices,
      ...(message === undefined ? {} : { message }),
    });
  }

  #finish(active: Active, pinned: string | undefined): void {
    if (active.timer !== undefined) this.#deps.timers.clearTimeout(active.timer);
    this.#active = undefined;
    this.#spent.unshift({ code: active.code, pinned });
    this.#spent.length = Math.min(this.#spent.length, SPENT_KEPT);
  }

  /** (Re)sets the timer that ends `active` when its time is up. */
  #arm(active: Active, ms: number): void {
    if (active.timer !== undefined) this.#deps.timers.clearTimeout(active.timer);
    active.timer = this.#deps.timers.setTimeout(() => {
      void this.#serially(() =>
        this.#end(active, 'expired', active.claimant === undefined ? [] : [active.claimant]),
      );
    }, ms);
  }

  async #record(fields: {
    action: 'started' | 'claim' | 'ended';
    [k: string]: unknown;
  }): Promise<void> {
    try {
      await this.#deps.audit.append({ event: 'pin', actor: 'socket', ...fields });
    } catch (err) {
      this.#deps.logger.error('audit append failed', { event: 'pin', error: errorLine(err) });
    }
  }

  #serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
