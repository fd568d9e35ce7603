/**
 * Reads back a gap in the bot's sync. When more happened in the room than one /sync
 * carries, the homeserver sends only the latest events and marks the timeline `limited`
 * (matrix-js-sdk then starts a new live timeline, `RoomEvent.TimelineReset`, whose
 * backwards token points before them). An owner's decision in the gap would otherwise
 * never reach the bot, so it pages back from that token (/messages, newest first) to
 * the last event it handled, and gives back what it missed, oldest first.
 *
 * It reads at most `limit` events. A gap longer than that, or one it cannot read, is
 * not acted on at all (the events beyond may be older than the bot's start, which it
 * never replays); the caller tells the owner to send again what they sent meanwhile.
 */
import { Direction, type MatrixEvent } from 'matrix-js-sdk';
import type { Logger } from '../../base/log.js';
import { errorSummary } from './client.js';

export interface GapReaderDeps {
  /** One page of the room's history before `from`, newest first, and the token after it. */
  readonly page: (
    from: string,
    limit: number,
    dir: Direction,
  ) => Promise<{ events: MatrixEvent[]; end: string | undefined }>;
  /** Whether the bot already took the event (the end of the gap). */
  readonly handled: (eventId: string) => boolean;
  /** How many events a gap may have before it is given up. */
  readonly limit: number;
  readonly logger: Logger;
}

const PAGE = 100;

export class GapReader {
  readonly #deps: GapReaderDeps;

  constructor(deps: GapReaderDeps) {
    this.#deps = deps;
  }

  /** The events of the gap before `token`, oldest first; undefined when it could not be read back. */
  async read(token: string): Promise<MatrixEvent[] | undefined> {
    const missed: MatrixEvent[] = [];
    let from: string | undefined = token;
    try {
      while (from !== undefined) {
        const page = await this.#deps.page(from, PAGE, Direction.Backward);
        for (const event of page.events) {
          const id = event.getId();
          if (id === undefined) continue;
          // Reached what the bot had before the gap: everything after it is the gap.
          if (this.#deps.handled(id)) return missed.reverse();
          if (missed.length === this.#deps.limit) return this.#tooLong();
          missed.push(event);
        }
        // The room's start: nothing older exists.
        if (page.events.length === 0 || page.end === undefined || page.end === from) {
          return missed.reverse();
        }
        from = page.end;
      }
    } catch (err) {
      this.#deps.logger.error('could not read back a gap in the sync', {
        error: errorSummary(err),
      });
      return undefined;
    }
    return missed.reverse();
  }

  #tooLong(): undefined {
    this.#deps.logger.error('a gap in the sync is longer than the bot reads back', {
      limit: this.#deps.limit,
    });
    return undefined;
  }
}
