/**
 * A decision that does not count, in an encrypted approval room: audited (`refused`,
 * with its reason; docs/contracts.md), logged, and told to the owner in the room once
 * per cause and request. Once, because the causes are the homeserver's or an agent's to
 * repeat: a ciphertext re-sent a hundred times, or a hundred clear-text forgeries, cost
 * one notice each kind, not a hundred.
 */
import type { Logger } from '../../../base/log.js';
import { escapeHtml } from '../../../base/text.js';
import type { ApprovalAudit } from '../../ports.js';
import type { Reply } from '../../reply.js';
import { BoundedSet } from '../bounded-set.js';
import { errorSummary } from '../client.js';
import type { SenderVerdict } from './sender-device.js';

/**
 * Why a decision in the encrypted room did not count: the audit `reason`s, each a row of
 * docs/contracts.md §4 (a test holds the two together).
 */
export const REFUSAL_REASONS = [
  // From sender-device.ts: not a pinned device's encrypted message.
  'not_encrypted',
  'undecryptable',
  'forwarded_key',
  'unknown_device',
  'unpinned_device',
  'unauthenticated',
  // An edit: it decides nothing, and does not change what the edited message said.
  'edited',
  // A message already counted, served again (under any event id).
  'replay',
  // A vote whose relation names another request's poll than its answer does.
  'relation_mismatch',
  // A vote whose answer names no poll this grant database posted.
  'unknown_poll',
] as const;

export type RefusalReason = (typeof REFUSAL_REASONS)[number];

// Every reason the device check gives is one of them (a compile-time check).
type DeviceReason = Extract<SenderVerdict, { ok: false }>['reason'];
const _everyDeviceReason: Exclude<DeviceReason, RefusalReason> extends never ? true : never = true;

export interface Refusal {
  readonly reason: RefusalReason;
  readonly what: 'text' | 'vote' | 'edit';
  /** The request the message named (its own words), when it named one. */
  readonly request?: number | undefined;
  /** The session that sent it, when known. */
  readonly device?: string | undefined;
  /** For a replay: the event id it was counted under first. */
  readonly firstEventId?: string | undefined;
}

export interface RefusedDecisionsDeps {
  readonly approver: string;
  readonly logger: Logger;
  readonly audit?: ApprovalAudit | undefined;
  /** Answers in the room, in reply to an event. */
  readonly reply: (reply: Reply, inReplyTo: string) => Promise<void>;
  /** How many causes it remembers having told (the oldest forgotten first). */
  readonly toldLimit: number;
}

function plain(text: string): Reply {
  return { text, html: escapeHtml(text) };
}

/** What the owner is told, or undefined when the cause is not worth a notice. */
export function refusalNotice(r: Refusal): Reply | undefined {
  const subject = r.request === undefined ? 'a command' : `a decision for request ${r.request}`;
  const again =
    r.request === undefined
      ? ''
      : ` To decide, send "approve ${r.request}" or "deny ${r.request}" from your pinned device.`;
  switch (r.reason) {
    case 'unpinned_device':
      // The text is in docs/contracts.md.
      return r.device === undefined
        ? undefined
        : plain(`${subject} came from session ${r.device}, which is not pinned; ignored`);
    case 'not_encrypted':
      return plain(
        `${subject} arrived unencrypted, which the homeserver or any client can send; ignored.${again}`,
      );
    case 'unknown_device':
    case 'unauthenticated':
    case 'forwarded_key':
      return plain(
        `${subject} could not be tied to a pinned session (${r.reason.replace('_', ' ')}); ignored.${again}`,
      );
    case 'edited':
      return plain(
        `Edits decide nothing: ${subject} came as an edit and was ignored, and the edited message still says what it said.${again}`,
      );
    case 'replay':
      return plain(
        `${subject} arrived again under another event id (the homeserver re-sent a message of yours); it counted once, the repeats are ignored.`,
      );
    case 'relation_mismatch':
      return plain(
        `${subject} came as a vote whose reference to its poll was changed on the way; ignored.${again}`,
      );
    case 'unknown_poll':
      return plain(
        `A vote named no poll of this broker (a poll of an earlier broker or grant database, or a forged one); ignored.${again}`,
      );
    case 'undecryptable':
      return undefined;
  }
}

export class RefusedDecisions {
  readonly #deps: RefusedDecisionsDeps;
  readonly #told: BoundedSet;

  constructor(deps: RefusedDecisionsDeps) {
    this.#deps = deps;
    this.#told = new BoundedSet(deps.toldLimit);
  }

  /** Audits the refusal of event `eventId` and tells the owner, once per cause. */
  async refuse(eventId: string, r: Refusal): Promise<Reply | undefined> {
    const { logger, audit, approver } = this.#deps;
    logger.warn('ignored a decision in the encrypted room', {
      reason: r.reason,
      what: r.what,
      ...(r.request === undefined ? {} : { request: r.request }),
      ...(r.device === undefined ? {} : { device: r.device }),
    });
    try {
      await audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: approver,
        reason: r.reason,
        ...(r.device === undefined ? {} : { device_id: r.device }),
        ...(r.request === undefined ? {} : { request: r.request }),
        what: r.what,
        event_id: eventId,
        ...(r.firstEventId === undefined ? {} : { first_event_id: r.firstEventId }),
      });
    } catch (err) {
      logger.error('audit append failed', { error: errorSummary(err) });
    }
    const notice = refusalNotice(r);
    if (notice === undefined) return undefined;
    // Security: once per cause (and request, and session), never once per event: the
    // events are the homeserver's or an agent's to multiply.
    if (!this.#told.add([r.reason, r.request ?? '-', r.device ?? '-'].join('\u0000'))) {
      return undefined;
    }
    await this.#deps.reply(notice, eventId);
    return notice;
  }

  /** An event nobody can read: audited, never guessed at, not told (it may be anything). */
  async undecryptable(eventId: string, sender: string | undefined): Promise<void> {
    const { logger, audit } = this.#deps;
    logger.warn('an event in the approval room could not be decrypted; ignored', { sender });
    try {
      await audit?.append({
        event: 'refused',
        surface: 'matrix',
        actor: sender ?? 'unknown',
        reason: 'undecryptable',
        event_id: eventId,
      });
    } catch (err) {
      logger.error('audit append failed', { error: errorSummary(err) });
    }
  }
}
