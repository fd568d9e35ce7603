/**
 * The decision rule of an encrypted approval room (`matrix.encryption: required`): a
 * typed command or a poll vote counts only when it arrived encrypted, decrypted, and
 * came from one of the approver's pinned devices. Everything else is audited; a
 * decision from another session of the approver's account is also reported in the
 * room, so the owner learns that someone is using their account.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import type { Logger } from '../../../base/log.js';
import { escapeHtml } from '../../../base/text.js';
import type { ApprovalAudit } from '../../ports.js';
import type { Reply } from '../../reply.js';
import { errorSummary } from '../client.js';
import type { BotCrypto } from './bot-crypto.js';
import type { SenderVerdict } from './sender-device.js';

export interface DeviceGateDeps {
  readonly crypto: () => BotCrypto | undefined;
  readonly approver: string;
  readonly logger: Logger;
  readonly audit?: ApprovalAudit | undefined;
}

export type GateResult = { ok: true } | { ok: false; notice?: Reply };

function plain(text: string): Reply {
  return { text, html: escapeHtml(text) };
}

/** The answer to a reaction in an encrypted room: how to decide instead. */
export function reactionNotice(requestId: number | undefined): Reply {
  const n = requestId === undefined ? 'N' : String(requestId);
  return plain(
    `Reactions decide nothing in this encrypted room (Matrix sends them unencrypted, so they cannot be tied to your pinned device): vote in the poll under the request, or type "approve ${n}" or "deny ${n}".`,
  );
}

export class DeviceGate {
  readonly #deps: DeviceGateDeps;

  constructor(deps: DeviceGateDeps) {
    this.#deps = deps;
  }

  async check(
    event: MatrixEvent,
    what: 'text' | 'vote',
    requestId: number | undefined,
  ): Promise<GateResult> {
    const crypto = this.#deps.crypto();
    const verdict: SenderVerdict =
      crypto === undefined ? { ok: false, reason: 'undecryptable' } : await crypto.sender(event);
    if (verdict.ok) return { ok: true };
    const device = verdict.deviceId;
    this.#deps.logger.warn('ignored a decision that did not come from a pinned device', {
      reason: verdict.reason,
      ...(device === undefined ? {} : { device }),
      what,
    });
    try {
      await this.#deps.audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: this.#deps.approver,
        reason: verdict.reason,
        ...(device === undefined ? {} : { device_id: device }),
        ...(requestId === undefined ? {} : { request: requestId }),
        what,
        event_id: event.getId(),
      });
    } catch (err) {
      this.#deps.logger.error('audit append failed', { error: errorSummary(err) });
    }
    if (verdict.reason !== 'unpinned_device' || device === undefined) return { ok: false };
    const subject = requestId === undefined ? 'a command' : `a decision for request ${requestId}`;
    return {
      ok: false,
      notice: plain(`${subject} came from session ${device}, which is not pinned; ignored`),
    };
  }

  /** An event nobody can read: audited, never guessed at. */
  async undecryptable(event: MatrixEvent): Promise<void> {
    this.#deps.logger.warn('an event in the approval room could not be decrypted; ignored', {
      sender: event.getSender(),
    });
    try {
      await this.#deps.audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: event.getSender() ?? 'unknown',
        reason: 'undecryptable',
        event_id: event.getId(),
      });
    } catch (err) {
      this.#deps.logger.error('audit append failed', { error: errorSummary(err) });
    }
  }
}
