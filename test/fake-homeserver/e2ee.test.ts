/**
 * The fake homeserver's end-to-end encryption endpoints, driven by real matrix-js-sdk
 * clients with Rust crypto: what the spec requires of a server for two sessions to
 * exchange encrypted messages, plus interactive auth where the spec asks for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeHomeserver, type FakeHomeserver } from '../../fakes/homeserver.js';
import { e2eeClient, eventSeenBy, type E2eeClient } from '../../support/e2ee-client.js';

const A = '@alice:hs.test';
const B = '@bob:hs.test';
const ROOM = '!secret:hs.test';

let hs: FakeHomeserver;
let alice: E2eeClient;
let bob: E2eeClient;

beforeAll(async () => {
  hs = await startFakeHomeserver({
    users: { [A]: { token: 'tok-a', password: 'pw-a' }, [B]: { token: 'tok-b', password: 'pw-b' } },
  });
  hs.createRoom({ id: ROOM, members: [A, B], encrypted: true });
  [alice, bob] = await Promise.all([e2eeClient(hs, A), e2eeClient(hs, B)]);
});
afterAll(async () => {
  alice.stop();
  bob.stop();
  await hs.close();
});

async function call(
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${hs.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('encrypted messages between two real clients', () => {
  it('a message one session sends arrives encrypted and the other decrypts it', async () => {
    const sent = await alice.client.sendTextMessage(ROOM, 'only for bob');
    const stored = hs.event(sent.event_id);
    expect(stored?.type).toBe('m.room.encrypted');
    expect(JSON.stringify(stored?.content)).not.toContain('only for bob');
    const seen = await eventSeenBy(bob, ROOM, sent.event_id);
    expect(seen.isDecryptionFailure()).toBe(false);
    expect(seen.getContent()['body']).toBe('only for bob');
  });

  it('keys/query shows each session with the ed25519 key its client reports', async () => {
    const { json } = await call('POST', '/_matrix/client/v3/keys/query', 'tok-b', {
      device_keys: { [A]: [] },
    });
    const devices = (json['device_keys'] as Record<string, Record<string, { keys: object }>>)[A];
    const keys = devices?.[alice.deviceId]?.keys as Record<string, string>;
    expect(keys[`ed25519:${alice.deviceId}`]).toBe(alice.ed25519);
  });

  it('claiming a one-time key hands it out once', async () => {
    const claim = () =>
      call('POST', '/_matrix/client/v3/keys/claim', 'tok-b', {
        one_time_keys: { [A]: { [alice.deviceId]: 'signed_curve25519' } },
      });
    const first = JSON.stringify((await claim()).json);
    const second = JSON.stringify((await claim()).json);
    expect(first).toContain('signed_curve25519:');
    expect(second).not.toBe(first);
  });
});

describe('interactive auth', () => {
  it('the first cross-signing upload needs none; replacing the keys needs the password', async () => {
    const key = (k: string) => ({ user_id: B, usage: ['master'], keys: { [`ed25519:${k}`]: k } });
    const first = await call('POST', '/_matrix/client/v3/keys/device_signing/upload', 'tok-b', {
      master_key: key('first'),
    });
    expect(first.status).toBe(200);
    const again = await call('POST', '/_matrix/client/v3/keys/device_signing/upload', 'tok-b', {
      master_key: key('second'),
    });
    expect(again.status).toBe(401);
    const session = String(again.json['session']);
    expect(again.json['flows']).toEqual([{ stages: ['m.login.password'] }]);
    const wrong = await call('POST', '/_matrix/client/v3/keys/device_signing/upload', 'tok-b', {
      master_key: key('second'),
      auth: {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: B },
        password: 'x',
        session,
      },
    });
    expect(wrong.status).toBe(401);
    const right = await call('POST', '/_matrix/client/v3/keys/device_signing/upload', 'tok-b', {
      master_key: key('second'),
      auth: {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: B },
        password: 'pw-b',
        session: String(wrong.json['session']),
      },
    });
    expect(right.status).toBe(200);
  });

  it('deleting a session needs the password and logs it out', async () => {
    const old = hs.login(A);
    const path = `/_matrix/client/v3/devices/${old.deviceId}`;
    const challenge = await call('DELETE', path, 'tok-a', {});
    expect(challenge.status).toBe(401);
    expect(hs.devices(A)).toContain(old.deviceId);
    const done = await call('DELETE', path, 'tok-a', {
      auth: {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: A },
        password: 'pw-a',
        session: String(challenge.json['session']),
      },
    });
    expect(done.status).toBe(200);
    expect(hs.devices(A)).not.toContain(old.deviceId);
    expect((await call('GET', '/_matrix/client/v3/account/whoami', old.token)).status).toBe(401);
  });

  it('there is no key backup', async () => {
    const res = await call('GET', '/_matrix/client/v3/room_keys/version', 'tok-a');
    expect(res).toMatchObject({ status: 404, json: { errcode: 'M_NOT_FOUND' } });
  });
});
