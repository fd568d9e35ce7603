/**
 * What the bot posts in the approval room: one event at a time, failing fast (a send
 * that fails makes the channel unhealthy for a while, so `request_access` answers
 * `error` instead of waiting), and the owner's answers with their continuations.
 */
import type { Clock } from '../../base/domain.js';
import type { Logger } from '../../base/log.js';
import { ApprovalUnavailableError } from '../gateway.js';
import type { Reply } from '../reply.js';
import { errorSummary, sendContent, type EventContent } from './client.js';
import { UNAVAILABLE_MESSAGE, type MatrixConnection } from './connection.js';

export interface RoomSenderDeps {
  readonly roomId: string;
  readonly connection: Pick<MatrixConnection, 'usableClient'>;
  readonly logger: Logger;
  readonly now: Clock;
}

export class RoomSender {
  #lastFailureAt: number | undefined;
  readonly #deps: RoomSenderDeps;

  constructor(deps: RoomSenderDeps) {
    this.#deps = deps;
  }

  /** A send failed less than `windowMs` ago (and none succeeded since). */
  failedWithin(windowMs: number): boolean {
    return this.#lastFailureAt !== undefined && this.#deps.now() - this.#lastFailureAt < windowMs;
  }

  /** The connection is back: a failure from the outage no longer says anything. */
  recovered(): void {
    this.#lastFailureAt = undefined;
  }

  /** Sends one event; its event id as the homeserver answered. Throws ApprovalUnavailableError. */
  async send(type: string, content: EventContent, what: string): Promise<string> {
    const client = this.#deps.connection.usableClient();
    // Security: a message of the bot mentions no one. An empty `m.mentions` tells
    // homeservers and clients (Matrix 1.7+) so, which turns off the legacy rules that
    // notify on a name, a user ID or `@room` anywhere in the body, where agent text is.
    const sent = type === 'm.room.message' ? { ...content, 'm.mentions': {} } : content;
    try {
      const eventId = await sendContent(client, this.#deps.roomId, type, sent);
      this.#lastFailureAt = undefined;
      return eventId;
    } catch (err) {
      this.#lastFailureAt = this.#deps.now();
      this.#deps.logger.warn('matrix send failed', { what, error: errorSummary(err) });
      throw new ApprovalUnavailableError('send_failed', UNAVAILABLE_MESSAGE, { cause: err });
    }
  }

  /** The reply, then its continuation messages (a long `show N`), in order. */
  async reply(reply: Reply, inReplyTo: string | undefined): Promise<void> {
    const parts = [{ plain: reply.text, html: reply.html }, ...(reply.continued ?? [])];
    for (const part of parts) {
      const content: EventContent = {
        msgtype: 'm.notice',
        body: part.plain,
        format: 'org.matrix.custom.html',
        formatted_body: part.html,
      };
      if (inReplyTo !== undefined)
        content['m.relates_to'] = { 'm.in_reply_to': { event_id: inReplyTo } };
      try {
        await this.send('m.room.message', content, 'reply');
      } catch {
        // Already logged; the decision stands and `status` shows it. A later part
        // without the earlier one would mislead, so stop here.
        return;
      }
    }
  }
}
