/**
 * RequestIndex.requestOf on a message it did not post in this process: the message is
 * fetched from the homeserver and trusted only when the bot sent it for the current
 * grant database (request numbers restart at 1 in a new one).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  REQUEST_ID_KEY,
  RequestIndex,
  STORE_ID_KEY,
} from '../../broker/approval/matrix/request-index.js';
import { memoryLogger } from '../../broker/base/log.js';

const BOT = '@broker:hs.test';
const STORE = '0123456789abcdef0123456789abcdef';

function indexOver(event: unknown, opts: { storeId?: string } = { storeId: STORE }): RequestIndex {
  return new RequestIndex({
    bot: BOT,
    storeId: opts.storeId,
    limit: 10,
    logger: memoryLogger(),
    fetchEvent: async () => event,
  });
}

const message = (content: Record<string, unknown>, sender = BOT) => ({
  sender,
  type: 'm.room.message',
  content: { msgtype: 'm.text', body: 'Request', ...content },
});

describe('a request message fetched from the homeserver', () => {
  it('is trusted when the bot sent it for this database, and remembered', async () => {
    let fetched = 0;
    const index = new RequestIndex({
      bot: BOT,
      storeId: STORE,
      limit: 10,
      logger: memoryLogger(),
      fetchEvent: async () => {
        fetched++;
        return message({ [REQUEST_ID_KEY]: 3, [STORE_ID_KEY]: STORE });
      },
    });
    expect(await index.requestOf('$m')).toBe(3);
    expect(await index.requestOf('$m')).toBe(3);
    expect(fetched).toBe(1);
  });
});

describe('attack: a request message from another grant database', () => {
  it('another store id is not trusted (the old request 3 is not the new request 3)', async () => {
    const other = 'fedcba9876543210fedcba9876543210';
    expect(
      await indexOver(message({ [REQUEST_ID_KEY]: 3, [STORE_ID_KEY]: other })).requestOf('$m'),
    ).toBeUndefined();
  });

  it('a message without the store key (an older broker posted it) is not trusted', async () => {
    expect(await indexOver(message({ [REQUEST_ID_KEY]: 3 })).requestOf('$m')).toBeUndefined();
  });

  it('a store without an id trusts no fetched message', async () => {
    const event = message({ [REQUEST_ID_KEY]: 3, [STORE_ID_KEY]: STORE });
    expect(await indexOver(event, {}).requestOf('$m')).toBeUndefined();
  });

  it("the right store key in someone else's message is not trusted", async () => {
    const event = message({ [REQUEST_ID_KEY]: 3, [STORE_ID_KEY]: STORE }, '@mallory:hs.test');
    expect(await indexOver(event).requestOf('$m')).toBeUndefined();
  });

  it('property: only the exact current store id is trusted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f]{32}$/), fc.integer()), {
          nil: undefined,
        }),
        fc.integer({ min: 1, max: 1_000_000 }),
        async (store, id) => {
          const content: Record<string, unknown> = { [REQUEST_ID_KEY]: id };
          if (store !== undefined) content[STORE_ID_KEY] = store;
          const got = await indexOver(message(content)).requestOf('$m');
          expect(got).toBe(store === STORE ? id : undefined);
        },
      ),
    );
  });
});
