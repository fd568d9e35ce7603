/**
 * Which bot message stands for which request. A bounded map; a message posted before a
 * restart is looked up on the homeserver and trusted only when the bot sent it for the
 * current grant database. (Which 👍 made which approval is kept in the grant store,
 * through the engine.)
 */
import { z } from 'zod';
import { errorSummary } from './client.js';
import type { Logger } from '../../base/log.js';

/** Marks a bot message as the post of a request; read back only from the bot's events. */
export const REQUEST_ID_KEY = 'org.nextcloud_access_broker.request';

/** Which grant database the request number belongs to (GrantStore.storeId). */
export const STORE_ID_KEY = 'org.nextcloud_access_broker.store';

const BotRequestEventSchema = z.object({
  sender: z.string(),
  type: z.literal('m.room.message'),
  content: z.object({
    [REQUEST_ID_KEY]: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    [STORE_ID_KEY]: z.string().optional(),
  }),
});

/** Bounded Map: forgets the oldest entry beyond `limit`. */
function remember<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
}

export class RequestIndex {
  /** Request message event id → request id. */
  readonly #byMessage = new Map<string, number>();

  readonly #deps: {
    bot: string;
    /**
     * The current grant database's id (GrantStore.storeId); undefined when the store
     * has none, and then no message fetched from the homeserver is trusted.
     */
    storeId: string | undefined;
    limit: number;
    logger: Logger;
    /** Fetches an event of the approval room from the homeserver. */
    fetchEvent: (eventId: string) => Promise<unknown>;
  };

  constructor(deps: {
    bot: string;
    /**
     * The current grant database's id (GrantStore.storeId); undefined when the store
     * has none, and then no message fetched from the homeserver is trusted.
     */
    storeId: string | undefined;
    limit: number;
    logger: Logger;
    /** Fetches an event of the approval room from the homeserver. */
    fetchEvent: (eventId: string) => Promise<unknown>;
  }) {
    this.#deps = deps;
  }

  posted(messageId: string, requestId: number): void {
    remember(this.#byMessage, messageId, requestId, this.#deps.limit);
  }

  /** Whether `messageId` is the id a send of this run was answered with (no look-up). */
  known(messageId: string): boolean {
    return this.#byMessage.has(messageId);
  }

  /** The request a bot message was posted for, or undefined when it is not one. */
  async requestOf(messageId: string): Promise<number | undefined> {
    const known = this.#byMessage.get(messageId);
    if (known !== undefined) return known;
    // Posted before a restart: ask the homeserver for the message itself.
    let raw: unknown;
    try {
      raw = await this.#deps.fetchEvent(messageId);
    } catch (err) {
      this.#deps.logger.debug('reaction target not found', { error: errorSummary(err) });
      return undefined;
    }
    const parsed = BotRequestEventSchema.safeParse(raw);
    // Security: only the bot's own messages name requests. The homeserver vouches for
    // `sender`, so nobody else can forge the request marker.
    if (!parsed.success || parsed.data.sender !== this.#deps.bot) return undefined;
    // Security: request numbers restart at 1 when the grant database is replaced, so the
    // number alone could approve a different request than the one the owner saw (a 👍
    // on the old request 3 approving the new request 3). Trust the message only when it
    // names the current database. Fail closed: a message without the store key (posted
    // by an older broker) or a store without an id is not trusted; the owner can type
    // the command instead.
    const store = parsed.data.content[STORE_ID_KEY];
    if (this.#deps.storeId === undefined || store !== this.#deps.storeId) {
      this.#deps.logger.debug('reaction on a request message from another grant database', {
        message: messageId,
      });
      return undefined;
    }
    const id = parsed.data.content[REQUEST_ID_KEY];
    this.posted(messageId, id);
    return id;
  }
}
