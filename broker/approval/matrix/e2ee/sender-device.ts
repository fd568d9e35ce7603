/**
 * Which device sent a decrypted event, and whether it is a pinned one. The shield
 * matrix-js-sdk computes is not proof (it trusts any session the owner's identity
 * signed, and an agent can run such a session), so the device is found by the key that
 * encrypted the event and compared with the pin.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import { EventShieldReason, type CryptoApi } from 'matrix-js-sdk/lib/crypto-api/index.js';
import type { PinnedDevice } from '../../../config.js';

export type SenderVerdict =
  | { ok: true; deviceId: string }
  | {
      ok: false;
      reason:
        | 'not_encrypted'
        | 'undecryptable'
        | 'forwarded_key'
        | 'unknown_device'
        | 'unpinned_device'
        | 'unauthenticated';
      deviceId?: string;
    };

export async function pinnedSender(
  crypto: CryptoApi,
  event: MatrixEvent,
  approver: string,
  pins: readonly PinnedDevice[],
): Promise<SenderVerdict> {
  // Security: a clear-text event is whatever the homeserver says it is.
  if (!event.isEncrypted()) return { ok: false, reason: 'not_encrypted' };
  if (event.isDecryptionFailure()) return { ok: false, reason: 'undecryptable' };
  // Security: a key someone forwarded (shared history) says nothing about who wrote it.
  if (event.getKeyForwardingUser() !== undefined) return { ok: false, reason: 'forwarded_key' };
  const senderKey = event.getSenderKey();
  const devices = (await crypto.getUserDeviceInfo([approver], true)).get(approver);
  const device = [...(devices?.values() ?? [])].find(
    (d) => senderKey !== null && d.getIdentityKey() === senderKey,
  );
  if (device === undefined) return { ok: false, reason: 'unknown_device' };
  const pin = pins.find((p) => p.deviceId === device.deviceId);
  if (
    pin === undefined ||
    device.getFingerprint() !== pin.ed25519 ||
    event.getClaimedEd25519Key() !== pin.ed25519
  ) {
    return { ok: false, reason: 'unpinned_device', deviceId: device.deviceId };
  }
  const info = await crypto.getEncryptionInfoForEvent(event);
  if (info === null || info.shieldReason === EventShieldReason.AUTHENTICITY_NOT_GUARANTEED) {
    return { ok: false, reason: 'unauthenticated', deviceId: device.deviceId };
  }
  return { ok: true, deviceId: device.deviceId };
}
