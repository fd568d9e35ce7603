/**
 * Which device a decision came from, in an encrypted approval room
 * (`matrix.encryption: required`): a typed command or a poll vote counts only when it
 * arrived encrypted, decrypted, and came from one of the approver's pinned devices
 * (sender-device.ts). What happens to one that did not is refused-decisions.ts's.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import type { Logger } from '../../../base/log.js';
import { escapeHtml } from '../../../base/text.js';
import type { Reply } from '../../reply.js';
import type { BotCrypto } from './bot-crypto.js';
import type { SenderVerdict } from './sender-device.js';

export interface DeviceGateDeps {
  readonly crypto: () => BotCrypto | undefined;
  readonly logger: Logger;
}

function plain(text: string): Reply {
  return { text, html: escapeHtml(text) };
}

/**
 * The answer to a reaction in an encrypted room: how to decide instead. It names no
 * request: which message a reaction is on is told by event ids, which the homeserver
 * writes, so a number here could send the owner to decide on another request than the
 * one they reacted to.
 */
export function reactionNotice(): Reply {
  return plain(
    'Reactions decide nothing in this encrypted room (Matrix sends them unencrypted, so they cannot be tied to your pinned device): vote in the poll under the request, or type "approve N" or "deny N" with its number.',
  );
}

export class DeviceGate {
  readonly #deps: DeviceGateDeps;

  constructor(deps: DeviceGateDeps) {
    this.#deps = deps;
  }

  /** Whether `event` came, encrypted, from one of the approver's pinned devices. */
  async check(event: MatrixEvent, what: string): Promise<SenderVerdict> {
    const crypto = this.#deps.crypto();
    const verdict: SenderVerdict =
      crypto === undefined ? { ok: false, reason: 'undecryptable' } : await crypto.sender(event);
    if (!verdict.ok) {
      this.#deps.logger.warn('ignored a decision that did not come from a pinned device', {
        reason: verdict.reason,
        ...(verdict.deviceId === undefined ? {} : { device: verdict.deviceId }),
        what,
      });
    }
    return verdict;
  }
}
