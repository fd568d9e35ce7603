/**
 * Which device sent a decrypted event, and whether it is a pinned one. The shield
 * matrix-js-sdk computes is not proof (it trusts any session the owner's identity
 * signed, and an agent can run such a session), so the device is found by the key that
 * encrypted the event and compared with the pin. A `pair CODE` message passes the same
 * checks but the pin (pairingSender): its device is the one to be pinned.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import { EventShieldReason, type CryptoApi } from 'matrix-js-sdk/lib/crypto-api/index.js';
import type { Device } from 'matrix-js-sdk';
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

type Identified = { ok: true; device: Device } | Extract<SenderVerdict, { ok: false }>;

/** The approver's session whose key encrypted `event`, found by that key; else why not. */
async function identify(
  crypto: CryptoApi,
  event: MatrixEvent,
  approver: string,
): Promise<Identified> {
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
  return { ok: true, device };
}

/** Whether the crypto layer vouches that the session whose key decrypted it wrote it. */
async function authenticated(crypto: CryptoApi, event: MatrixEvent): Promise<boolean> {
  const info = await crypto.getEncryptionInfoForEvent(event);
  return info !== null && info.shieldReason !== EventShieldReason.AUTHENTICITY_NOT_GUARANTEED;
}

export async function pinnedSender(
  crypto: CryptoApi,
  event: MatrixEvent,
  approver: string,
  pins: readonly PinnedDevice[],
): Promise<SenderVerdict> {
  const found = await identify(crypto, event, approver);
  if (!found.ok) return found;
  const { device } = found;
  const pin = pins.find((p) => p.deviceId === device.deviceId);
  if (
    pin === undefined ||
    device.getFingerprint() !== pin.ed25519 ||
    event.getClaimedEd25519Key() !== pin.ed25519
  ) {
    return { ok: false, reason: 'unpinned_device', deviceId: device.deviceId };
  }
  if (!(await authenticated(crypto, event))) {
    return { ok: false, reason: 'unauthenticated', deviceId: device.deviceId };
  }
  return { ok: true, deviceId: device.deviceId };
}

/** The session that sent a `pair CODE` message: identified as a decision's is, not pinned. */
export type PairingVerdict =
  | {
      ok: true;
      device: { deviceId: string; ed25519: string; name: string | undefined };
    }
  | Extract<SenderVerdict, { ok: false }>;

export async function pairingSender(
  crypto: CryptoApi,
  event: MatrixEvent,
  approver: string,
): Promise<PairingVerdict> {
  const found = await identify(crypto, event, approver);
  if (!found.ok) return found;
  const { device } = found;
  const ed25519 = device.getFingerprint();
  // Security: the key shown on the host must be the one the message was signed with.
  if (
    ed25519 === undefined ||
    event.getClaimedEd25519Key() !== ed25519 ||
    !(await authenticated(crypto, event))
  ) {
    return { ok: false, reason: 'unauthenticated', deviceId: device.deviceId };
  }
  return { ok: true, device: { deviceId: device.deviceId, ed25519, name: device.displayName } };
}
