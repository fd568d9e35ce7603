/**
 * `broker pins` and `broker unpin DEVICE_ID` on the owner socket: the approver's pinned
 * devices (the configuration's and the paired ones), and removing a paired one.
 */
import { iso } from '../../base/time.js';
import type { ApproverPins, PinEntry } from '../pairing/pins.js';
import { groupedKey } from '../pairing/code.js';
import type { OwnerResponse, PinJson } from './protocol.js';

/** Why there is nothing to pin, for a broker without an encrypted room. */
export const NO_PAIRING =
  'pins are for an encrypted approval room: this broker runs without one (approval: console, or matrix.encryption: off)';
export const NO_PAIRING_NEXT =
  'set approval: matrix and matrix.encryption: required (docs/user-guide.md, "Encrypted approval room")';

export function pinJson(p: PinEntry): PinJson {
  return {
    device_id: p.deviceId,
    ed25519: p.ed25519,
    origin: p.origin,
    paired_at: p.pairedAt === undefined ? null : iso(p.pairedAt),
  };
}

function line(p: PinEntry): string {
  const how =
    p.origin === 'config'
      ? 'matrix.approver_devices'
      : `paired ${p.pairedAt === undefined ? '' : iso(p.pairedAt).slice(0, 16).replace('T', ' ')} UTC`;
  return `${p.deviceId}  ${groupedKey(p.ed25519)}  (${how})`;
}

export function pinsAnswer(pins: Pick<ApproverPins, 'entries'> | undefined): OwnerResponse {
  if (pins === undefined) return { ok: false, error: NO_PAIRING, next_step: NO_PAIRING_NEXT };
  const entries = pins.entries();
  const text =
    entries.length === 0
      ? 'No device is pinned: nobody can read or decide in the approval room. Run "broker pair" to pin the device you decide from.'
      : entries.map(line).join('\n');
  return { ok: true, text, pins: entries.map(pinJson) };
}

export async function unpinAnswer(
  pins: Pick<ApproverPins, 'unpin'> | undefined,
  deviceId: string,
  actor: string,
): Promise<OwnerResponse> {
  if (pins === undefined) return { ok: false, error: NO_PAIRING, next_step: NO_PAIRING_NEXT };
  const result = await pins.unpin(deviceId, { actor });
  if (!result.ok) return { ok: true, refused: true, text: `Nothing changed: ${result.message}.` };
  return {
    ok: true,
    text: `Unpinned ${deviceId}: its decisions no longer count, and it gets no further room keys.`,
    unpinned: pinJson(result.pin),
  };
}
