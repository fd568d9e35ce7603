/**
 * The approver's pinned devices, from both places they come from: the configuration
 * (`matrix.approver_devices`, changed only by editing it and restarting) and the devices
 * paired from the broker's host (`broker pair`, kept in data_dir by pin-file.ts, removed
 * with `broker unpin`). `source` is the PinSource the encrypted room's checks read at
 * every decision, so a pin counts, and an unpin stops counting, at once.
 *
 * Each change is written to the file, then audited (`pin` event); a change the audit
 * log cannot record is undone (an unaudited pin must not stand), and only a change that
 * stands is told to the listeners (the Matrix gateway: room keys, and the room).
 */
import type { Clock } from '../../base/domain.js';
import { errorLine } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { PinnedDevice } from '../../config.js';
import type { PinSource } from '../matrix/e2ee/pins.js';
import type { ApprovalAudit } from '../ports.js';
import { readPinFile, writePinFile, type PairedPin } from './pin-file.js';
import type { JsonObject } from '../../base/protocol.js';

export type PinOrigin = 'config' | 'paired';

export interface PinEntry extends PinnedDevice {
  readonly origin: PinOrigin;
  /** When a paired device was pinned. */
  readonly pairedAt?: number;
}

/** How a pin was confirmed: at the host's prompt, or in advance with `--expect`. */
export type PinConfirmation = 'host' | 'expect';

export type PinChange =
  | { readonly kind: 'pinned'; readonly pin: PinnedDevice; readonly confirmed: PinConfirmation }
  | { readonly kind: 'unpinned'; readonly pin: PinnedDevice };

/** Told of each change that stands; the change is answered once every listener is done. */
export type PinListener = (change: PinChange) => Promise<void>;

export type PinChangeResult =
  | { readonly ok: true; readonly pin: PinEntry }
  | {
      readonly ok: false;
      readonly code: 'not_pinned' | 'config_pin' | 'already_pinned' | 'not_recorded' | 'not_saved';
      readonly message: string;
    };

export interface ApproverPinsDeps {
  /** `matrix.approver_devices`. */
  readonly config: readonly PinnedDevice[];
  readonly dataDir: string;
  readonly audit: ApprovalAudit;
  readonly now: Clock;
  readonly logger: Logger;
  /** The broker's uid (default this process's): the pin file must be its own. */
  readonly uid?: number | undefined;
}

/** Who changed a pin, and the audit fields that tie it to its pairing. */
export interface PinContext {
  readonly actor: string;
  readonly fields?: Readonly<JsonObject>;
}

export class ApproverPins {
  #paired: PairedPin[];
  readonly #listeners = new Set<PinListener>();
  readonly #deps: ApproverPinsDeps;

  private constructor(deps: ApproverPinsDeps, paired: PairedPin[]) {
    this.#deps = deps;
    this.#paired = paired;
  }

  /** Reads the paired devices from data_dir. Throws PinFileError (the broker does not start). */
  static open(deps: ApproverPinsDeps): ApproverPins {
    return new ApproverPins(deps, readPinFile(deps.dataDir, deps.uid));
  }

  /** Every pin in force now: the configuration's, then the paired ones. */
  readonly source: PinSource = () => [...this.#deps.config, ...this.#paired];

  entries(): PinEntry[] {
    return [
      ...this.#deps.config.map((p) => ({ ...p, origin: 'config' as const })),
      ...this.#paired.map((p) => ({ ...p, origin: 'paired' as const })),
    ];
  }

  find(deviceId: string): PinEntry | undefined {
    return this.entries().find((p) => p.deviceId === deviceId);
  }

  subscribe(listener: PinListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Pins a paired device: written, audited, then told. */
  async pin(
    device: PinnedDevice,
    confirmed: PinConfirmation,
    ctx: PinContext,
  ): Promise<PinChangeResult> {
    const known = this.find(device.deviceId);
    if (known !== undefined) {
      return {
        ok: false,
        code: 'already_pinned',
        message: `session ${device.deviceId} is already pinned (${known.origin === 'config' ? 'in matrix.approver_devices' : 'paired'})`,
      };
    }
    const pin: PairedPin = {
      deviceId: device.deviceId,
      ed25519: device.ed25519,
      pairedAt: this.#deps.now(),
    };
    const before = this.#paired;
    const saved = this.#save([...before, pin]);
    if (saved !== undefined) return saved;
    const recorded = await this.#record('pinned', pin, ctx, { confirmed });
    if (!recorded) {
      // Security: a pin the audit log does not hold must not stand.
      this.#save(before);
      return this.#notRecorded(`session ${pin.deviceId} was not pinned`);
    }
    await this.#tell({ kind: 'pinned', pin, confirmed });
    return { ok: true, pin: { ...pin, origin: 'paired' } };
  }

  /** Unpins a paired device (a configured one is the configuration's to remove). */
  async unpin(deviceId: string, ctx: PinContext): Promise<PinChangeResult> {
    const known = this.find(deviceId);
    if (known === undefined) {
      return { ok: false, code: 'not_pinned', message: `session ${deviceId} is not pinned` };
    }
    if (known.origin === 'config') {
      return {
        ok: false,
        code: 'config_pin',
        message: `session ${deviceId} is pinned in matrix.approver_devices: remove it there and restart the broker`,
      };
    }
    const before = this.#paired;
    const saved = this.#save(before.filter((p) => p.deviceId !== deviceId));
    if (saved !== undefined) return saved;
    const recorded = await this.#record('unpinned', known, ctx, {});
    if (!recorded) {
      this.#save(before);
      return this.#notRecorded(`session ${deviceId} is still pinned`);
    }
    await this.#tell({ kind: 'unpinned', pin: known });
    return { ok: true, pin: known };
  }

  /** Writes `pins`; undefined when done, else the failure to answer with. */
  #save(pins: PairedPin[]): PinChangeResult | undefined {
    try {
      writePinFile(this.#deps.dataDir, pins);
      this.#paired = pins;
      return undefined;
    } catch (err) {
      this.#deps.logger.error('could not save the paired devices', { error: errorLine(err) });
      return { ok: false, code: 'not_saved', message: errorLine(err) };
    }
  }

  #notRecorded(what: string): PinChangeResult {
    return {
      ok: false,
      code: 'not_recorded',
      message: `the audit log could not record the change, so it was undone: ${what}; check the broker log and disk`,
    };
  }

  async #record(
    action: 'pinned' | 'unpinned',
    pin: PinnedDevice,
    ctx: PinContext,
    extra: JsonObject,
  ): Promise<boolean> {
    try {
      await this.#deps.audit.append({
        event: 'pin',
        action,
        actor: ctx.actor,
        device_id: pin.deviceId,
        ed25519: pin.ed25519,
        ...extra,
        ...ctx.fields,
      });
      return true;
    } catch (err) {
      this.#deps.logger.error('audit append failed', { event: 'pin', error: errorLine(err) });
      return false;
    }
  }

  async #tell(change: PinChange): Promise<void> {
    for (const listener of this.#listeners) {
      try {
        await listener(change);
      } catch (err) {
        this.#deps.logger.error('a follow-up of a pin change failed', { error: errorLine(err) });
      }
    }
  }
}
