/**
 * The approver's pinned devices on the bot's side of the encryption: only they are
 * marked verified, and the bot shares room keys with verified devices only, so no
 * other session (not even one of the approver's own account, cross-signed or not) can
 * read a request.
 *
 * Where pins come from is a `PinSource`, read afresh at each check: today the
 * configuration (`matrix.approver_devices`); another source (devices paired from the
 * broker's host, kept in the data folder) joins it without changing the checks.
 */
import type { MatrixClient } from 'matrix-js-sdk';
import { CryptoEvent } from 'matrix-js-sdk/lib/crypto-api/index.js';
import type { Logger } from '../../../base/log.js';
import type { MatrixConfig, PinnedDevice } from '../../../config.js';
import { errorSummary } from '../client.js';

/** The pins in force now (every check asks again). */
export type PinSource = () => readonly PinnedDevice[];

/** The pins of the configuration, `matrix.approver_devices`. */
export function configPins(cfg: Pick<MatrixConfig, 'approver_devices'>): PinSource {
  return () => cfg.approver_devices ?? [];
}

export class PinnedDeviceTrust {
  #running: Promise<void> = Promise.resolve();

  readonly #client: MatrixClient;
  readonly #approver: string;
  readonly #pins: PinSource;
  readonly #logger: Logger;

  constructor(client: MatrixClient, approver: string, pins: PinSource, logger: Logger) {
    this.#client = client;
    this.#approver = approver;
    this.#pins = pins;
    this.#logger = logger;
  }

  /** Verifies the pinned devices now, and again whenever the approver's devices change. */
  async start(): Promise<void> {
    this.#client.on(CryptoEvent.DevicesUpdated, this.#onDevicesUpdated);
    await this.refresh();
  }

  stop(): void {
    this.#client.off(CryptoEvent.DevicesUpdated, this.#onDevicesUpdated);
  }

  readonly #onDevicesUpdated = (users: string[]): void => {
    if (!users.includes(this.#approver)) return;
    this.#running = this.#running
      .then(() => this.refresh())
      .catch((err: unknown) => {
        this.#logger.warn("could not check the approver's devices", { error: errorSummary(err) });
      });
  };

  async refresh(): Promise<void> {
    const crypto = this.#client.getCrypto();
    if (crypto === undefined) return;
    const devices = (await crypto.getUserDeviceInfo([this.#approver], true)).get(this.#approver);
    for (const pin of this.#pins()) {
      const device = devices?.get(pin.deviceId);
      if (device === undefined) continue;
      if (device.getFingerprint() !== pin.ed25519) {
        // Security: a session under the pinned id with another key is not the pinned
        // device (a homeserver can make one); it gets neither keys nor a say.
        this.#logger.error(
          'a session of the approver uses a pinned session ID with another key; not trusted',
          {
            device: pin.deviceId,
          },
        );
        continue;
      }
      const status = await crypto.getDeviceVerificationStatus(this.#approver, pin.deviceId);
      // Setting it again would fire DevicesUpdated again: a loop.
      if (status?.localVerified === true) continue;
      await crypto.setDeviceVerified(this.#approver, pin.deviceId, true);
    }
  }
}
