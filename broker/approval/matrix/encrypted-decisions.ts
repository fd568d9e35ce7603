/**
 * The approver's words in an encrypted approval room (`matrix.encryption: required`,
 * docs/contracts.md), where the homeserver is an adversary: it can add, drop, delay,
 * reorder and re-send events and rewrite everything outside a ciphertext. So a typed
 * command, a vote or an edit counts only when
 * - it came, encrypted, from one of the approver's pinned devices (e2ee/device-gate.ts);
 * - it was never counted before: each message counts once, by the Megolm session and
 *   message index that encrypted it (megolm-key.ts, counted-messages.ts), whatever
 *   event id it is served under;
 * - it is not an edit: an edit decides nothing, and what the edited message said stands
 *   (the words are always the message's own, own-content.ts);
 * - for a vote: its own encrypted answer id names the request, with the nonce that
 *   request's poll carried (poll.ts, poll-nonces.ts), and no relation of it names
 *   another request's poll.
 * Reactions travel unencrypted and decide nothing. Every refusal is audited and told
 * once per cause (e2ee/refused-decisions.ts).
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import { normaliseEmoji, REACTION_KEYS } from '../emoji.js';
import { parseCommand } from '../parser.js';
import type { Reply } from '../reply.js';
import type { Classified } from './classify.js';
import type { CountedMessageStore } from './counted-messages.js';
import { reactionNotice, type DeviceGate } from './e2ee/device-gate.js';
import type { RefusedDecisions, Refusal } from './e2ee/refused-decisions.js';
import type { HandledEvent, MatrixEngine } from './gateway-deps.js';
import { megolmKey } from './megolm-key.js';
import { relationTargets } from './own-content.js';
import { parseAnswerId } from './poll.js';
import type { PollNonceStore } from './poll-nonces.js';
import type { RequestIndex } from './request-index.js';

export interface Outcome {
  readonly kind: HandledEvent['kind'];
  readonly reply?: Reply;
}

export interface EncryptedDecisionsDeps {
  readonly approver: string;
  readonly gate: DeviceGate;
  readonly refusals: RefusedDecisions;
  readonly counted: CountedMessageStore;
  readonly polls: PollNonceStore;
  readonly requests: Pick<RequestIndex, 'known'>;
  readonly engine: Pick<MatrixEngine, 'handleText'>;
  readonly reply: (reply: Reply, inReplyTo: string) => Promise<void>;
}

type Vote = Extract<Classified, { kind: 'vote' }>;
type Edit = Extract<Classified, { kind: 'edit' }>;

export class EncryptedDecisions {
  readonly #deps: EncryptedDecisionsDeps;

  constructor(deps: EncryptedDecisionsDeps) {
    this.#deps = deps;
  }

  /** A typed message of the approver (its own decrypted words, reply fallback stripped). */
  async text(event: MatrixEvent, eventId: string, body: string): Promise<Outcome> {
    const parsed = parseCommand(body);
    if (parsed === null) return { kind: 'not_a_command' };
    const command = parsed.ok ? (parsed.command as { request?: unknown }) : {};
    const request = typeof command.request === 'number' ? command.request : undefined;
    const refused = await this.#admit(event, eventId, { what: 'text', request });
    if (refused !== undefined) return refused;
    return this.#apply(body, eventId, 'text');
  }

  async vote(event: MatrixEvent, eventId: string, vote: Vote): Promise<Outcome> {
    const named = vote.answerId === undefined ? undefined : parseAnswerId(vote.answerId);
    const request = named?.requestId;
    const refused = await this.#admit(event, eventId, { what: 'vote', request });
    if (refused !== undefined) return refused;
    // No answer, or more than one: a retracted vote decides nothing.
    if (vote.answerId === undefined) return { kind: 'not_a_command' };
    // Security: the request is the one the vote's own encrypted answer names, with the
    // nonce only that request's encrypted poll carried; never the one an event id names.
    if (named === undefined || this.#deps.polls.nonceOf(named.requestId) !== named.nonce) {
      return this.#refuse(
        eventId,
        { reason: 'unknown_poll', what: 'vote', request },
        'refused_vote',
      );
    }
    // Security: a relation is the homeserver's to write (in clear on the wire, and copied
    // into a payload that has none); one naming another request's poll is tampering.
    for (const target of relationTargets(event)) {
      const other = this.#deps.polls.requestOfPoll(target);
      if (other !== undefined && other !== named.requestId) {
        return this.#refuse(
          eventId,
          { reason: 'relation_mismatch', what: 'vote', request },
          'refused_vote',
        );
      }
    }
    return this.#apply(`${named.answer} ${named.requestId}`, eventId, 'vote');
  }

  async edit(event: MatrixEvent, eventId: string, edit: Edit): Promise<Outcome> {
    // Edited chatter is nobody's business.
    if (!edit.commandLike) return { kind: 'ignore' };
    const refused = await this.#admit(event, eventId, { what: 'edit', request: edit.request });
    if (refused !== undefined) return refused;
    // Security: any session of the owner's account can read the room and send edits, and
    // the SDK lets an edit replace the words of the message it edits: an edit decides
    // nothing, and undoes nothing the edited message decided.
    return this.#refuse(
      eventId,
      { reason: 'edited', what: 'edit', request: edit.request },
      'refused_edit',
    );
  }

  /** A reaction on a message: unencrypted, so it decides nothing; the owner is told how to. */
  async reaction(target: string, key: string): Promise<Outcome> {
    if (!REACTION_KEYS.includes(normaliseEmoji(key))) return { kind: 'not_a_command' };
    // Only on a request message of this run (no look-up: the homeserver would answer it).
    if (!this.#deps.requests.known(target)) return { kind: 'unknown_target' };
    const notice = reactionNotice();
    await this.#deps.reply(notice, target);
    return { kind: 'reaction_refused', reply: notice };
  }

  /** Device, then count: undefined when the message may act, else how it was refused. */
  async #admit(
    event: MatrixEvent,
    eventId: string,
    what: Pick<Refusal, 'what' | 'request'>,
  ): Promise<Outcome | undefined> {
    const verdict = await this.#deps.gate.check(event, what.what);
    if (!verdict.ok) {
      return this.#refuse(
        eventId,
        { ...what, reason: verdict.reason, device: verdict.deviceId },
        'refused_device',
      );
    }
    // It decrypted, so its session and index are the ones the sender's key signed.
    const key = megolmKey(event.getWireContent());
    if (key === undefined) {
      return this.#refuse(eventId, { ...what, reason: 'undecryptable' }, 'refused_device');
    }
    // Security: each message counts once, kept across restarts; a re-sent ciphertext is
    // refused, never recorded as another decision.
    const counted = this.#deps.counted.count(key, eventId);
    if (!counted.first) {
      return this.#refuse(
        eventId,
        { ...what, reason: 'replay', firstEventId: counted.firstEventId },
        'refused_replay',
      );
    }
    return undefined;
  }

  async #refuse(eventId: string, r: Refusal, kind: HandledEvent['kind']): Promise<Outcome> {
    const notice = await this.#deps.refusals.refuse(eventId, r);
    return notice === undefined ? { kind } : { kind, reply: notice };
  }

  async #apply(text: string, eventId: string, kind: 'text' | 'vote'): Promise<Outcome> {
    const reply = await this.#deps.engine.handleText(text, this.#deps.approver);
    if (reply === null) return { kind: 'not_a_command' };
    await this.#deps.reply(reply, eventId);
    return { kind, reply };
  }
}
