/**
 * A matrix-js-sdk client with Rust crypto, logged in as one session on the fake
 * homeserver: the owner's phone, another session of the owner's account, or any other
 * Matrix client a test needs on the far side of the encryption.
 */
import type { MatrixEvent } from 'matrix-js-sdk';
import { ClientEvent, createClient, RoomEvent, SyncState, type MatrixClient } from 'matrix-js-sdk';
import type { FakeHomeserver } from '../fakes/homeserver.js';
import { until } from './until.js';

/** A logger that drops everything (the SDK is chatty; failures show in assertions). */
const SILENT = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  getChild: () => SILENT,
};

export interface E2eeClient {
  readonly client: MatrixClient;
  readonly deviceId: string;
  /** The ed25519 key of this session, as Element shows it ("Session key"). */
  readonly ed25519: string;
  /** Events of the room, decrypted when this session can. */
  events(roomId: string): Promise<MatrixEvent[]>;
  stop(): void;
}

export async function e2eeClient(
  hs: FakeHomeserver,
  userId: string,
  deviceId?: string,
  /** A session made otherwise (say, by a lying homeserver); default: a new login. */
  given?: { deviceId: string; token: string },
): Promise<E2eeClient> {
  const session = given ?? hs.login(userId, deviceId);
  const client = createClient({
    baseUrl: hs.url,
    accessToken: session.token,
    userId,
    deviceId: session.deviceId,
    logger: SILENT,
  });
  await client.initRustCrypto({ useIndexedDB: false });
  const prepared = new Promise<void>((resolve) => {
    const onSync = (state: SyncState): void => {
      if (state !== SyncState.Prepared) return;
      client.off(ClientEvent.Sync, onSync);
      resolve();
    };
    client.on(ClientEvent.Sync, onSync);
  });
  await client.startClient({ initialSyncLimit: 20, pollTimeout: 1_000, lazyLoadMembers: false });
  await prepared;
  const crypto = client.getCrypto();
  if (crypto === undefined) throw new Error('no crypto');
  const own = (await crypto.getUserDeviceInfo([userId], true)).get(userId)?.get(session.deviceId);
  const ed25519 = own?.getFingerprint();
  if (ed25519 === undefined) throw new Error('own device keys not found');
  return {
    client,
    deviceId: session.deviceId,
    ed25519,
    events: async (roomId) => {
      const room = client.getRoom(roomId);
      if (room === null) return [];
      const events = room.getLiveTimeline().getEvents();
      await Promise.all(events.map((e) => client.decryptEventIfNeeded(e)));
      return events;
    },
    stop: () => client.stopClient(),
  };
}

/** Waits until `client` has the event `eventId` in its live timeline, decrypted if it can be. */
export async function eventSeenBy(
  c: E2eeClient,
  roomId: string,
  eventId: string,
  timeoutMs = 8_000,
): Promise<MatrixEvent> {
  let found: MatrixEvent | undefined;
  await until(
    `event ${eventId} seen by ${c.deviceId}`,
    async () => {
      found = (await c.events(roomId)).find((e) => e.getId() === eventId);
      return found !== undefined && !found.isBeingDecrypted() && found.getType() !== '';
    },
    timeoutMs,
  );
  if (found === undefined) throw new Error('unreachable');
  return found;
}

export { RoomEvent };
