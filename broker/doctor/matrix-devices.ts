/**
 * The doctor's encryption checks (matrix.encryption, §11.1 of the design): in clear
 * text, the warning of what a decision there proves; with `required`, the approver's
 * devices and their ed25519 keys as the homeserver reports them, which ones are pinned,
 * the config line that pins another, and sessions the bot has left behind.
 */
import { z } from 'zod';
import type { MatrixConfig } from '../config.js';
import { loadIdentity } from '../approval/matrix/e2ee/identity-store.js';
import { type Check, fail, pass, warn } from './checklist.js';
import type { DoctorMatrixClient } from './matrix-client.js';

export const CLEAR_TEXT_WARNING =
  "matrix.encryption is off: decisions in a clear-text room are only as trustworthy as the homeserver and every session of the approver's account";

const DeviceKeysSchema = z.object({
  keys: z.record(z.string(), z.string()),
  unsigned: z.object({ device_display_name: z.string().optional() }).optional(),
});
const QueryAnswerSchema = z.object({
  device_keys: z.record(z.string(), z.record(z.string(), z.unknown())),
});

interface ReportedDevice {
  deviceId: string;
  ed25519: string | undefined;
  name: string | undefined;
}

function devicesOf(answer: unknown, userId: string): ReportedDevice[] | undefined {
  const parsed = QueryAnswerSchema.safeParse(answer);
  if (!parsed.success) return undefined;
  return Object.entries(parsed.data.device_keys[userId] ?? {}).map(([deviceId, raw]) => {
    const keys = DeviceKeysSchema.safeParse(raw);
    return {
      deviceId,
      ed25519: keys.success ? keys.data.keys[`ed25519:${deviceId}`] : undefined,
      name: keys.success ? keys.data.unsigned?.device_display_name : undefined,
    };
  });
}

/** The line for config.yaml that pins a device. */
export function pinLine(deviceId: string, ed25519: string): string {
  return `- "${deviceId} ${ed25519}"`;
}

export async function checkEncryption(
  cfg: MatrixConfig,
  client: DoctorMatrixClient,
  dataDir: string,
): Promise<Check[]> {
  if (cfg.encryption !== 'required') {
    return [
      warn(
        CLEAR_TEXT_WARNING,
        'set matrix.encryption: required, make the room encrypted and pin your devices (see the user guide\'s "Encrypted approval room")',
      ),
    ];
  }
  const checks: Check[] = [];
  const pins = cfg.approver_devices ?? [];
  let answer: unknown;
  try {
    answer = await client.queryKeys?.(cfg.approver);
  } catch (error) {
    const what = error instanceof Error ? error.message : 'unknown error';
    return [fail(`the approver's devices could not be listed`, 'check the homeserver', what)];
  }
  const devices = devicesOf(answer, cfg.approver) ?? [];
  let pinnedFound = 0;
  for (const d of devices) {
    const key = d.ed25519 ?? '(no key)';
    const label = `session ${d.deviceId}${d.name === undefined ? '' : ` "${d.name.slice(0, 60)}"`} key ${key}`;
    const pin = pins.find((p) => p.deviceId === d.deviceId);
    if (pin === undefined) {
      checks.push(
        warn(
          `${label}: not pinned (its decisions are ignored; it cannot read requests)`,
          d.ed25519 === undefined
            ? undefined
            : `if this is your device, compare the key with Element (Settings → Sessions) and add under matrix.approver_devices: ${pinLine(d.deviceId, d.ed25519)}`,
        ),
      );
    } else if (pin.ed25519 !== d.ed25519) {
      checks.push(
        fail(
          `${label}: pinned with another key`,
          'the session ID is pinned but the homeserver reports a different key: compare with Element (Settings → Sessions → Session key) before changing the pin',
          `pinned key ${pin.ed25519}`,
        ),
      );
    } else {
      pinnedFound += 1;
      checks.push(pass(`${label}: pinned`));
    }
  }
  if (pinnedFound === 0) {
    checks.push(
      fail(
        'no pinned device of the approver is known to the homeserver',
        'pin a device the homeserver lists above (matrix.approver_devices)',
      ),
    );
  }
  checks.push(...oldBotSessions(cfg, dataDir));
  // Security: say exactly what the mode proves, so nobody reads more into it.
  checks.push(pass(REQUIRED_MODE_NOTE));
  // Security: the owner socket bypasses the pins by design; say so where the pins are
  // checked, so nobody mistakes "only pinned devices decide" for "only the phone decides".
  checks.push(pass(OWNER_SOCKET_NOTE));
  return checks;
}

/** What doctor says `matrix.encryption: required` proves, and what it cannot (SECURITY.md). */
export const REQUIRED_MODE_NOTE =
  'matrix.encryption: required proves that a decision was encrypted by a pinned device, in that message, for that request, and counts it once: the homeserver can no longer make a decision, change one, or repeat one; it can still withhold or delay a message (a decision then arrives late or never, and its request expires)';

/** What doctor says of the owner commands when decisions need a pinned device. */
export const OWNER_SOCKET_NOTE =
  "also deciding: the owner commands (broker approve/deny/revoke) over <data_dir>/owner.sock, i.e. anyone running as the broker's OS user on this host, which holds the app passwords anyway";

function oldBotSessions(cfg: MatrixConfig, dataDir: string): Check[] {
  if (cfg.crypto_secret === undefined || cfg.crypto_secret === '') return [];
  try {
    const identity = loadIdentity(dataDir, cfg.crypto_secret);
    const old = identity?.devices.slice(0, -1) ?? [];
    if (old.length === 0) return [];
    return [
      warn(
        `old sessions of the bot (their keys ended with their run): ${old.join(', ').slice(0, 300)}`,
        'set matrix.bot_password_env to have the bot delete them, or sign them out in Element as the bot (Settings → Sessions)',
      ),
    ];
  } catch (error) {
    return [
      fail(
        "the bot's stored identity cannot be read",
        error instanceof Error ? error.message : undefined,
      ),
    ];
  }
}
