/**
 * The fake homeserver over raw HTTP: the Client-Server API behaviour the gateway tests
 * rely on (what matrix-js-sdk 43 calls and expects), checked without the SDK in between.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeHomeserver, type FakeHomeserver } from '../../fakes/homeserver.js';
import { hsCall } from '../../support/matrix.js';

const A = '@alice:hs.test';
const B = '@bob:hs.test';
const ROOM = '!r:hs.test';
let hs: FakeHomeserver;

beforeEach(async () => {
  hs = await startFakeHomeserver({
    users: { [A]: 'tok-a', [B]: { token: 'tok-b', password: 'pw' } },
  });
  hs.createRoom({ id: ROOM, members: [A, B] });
});
afterEach(async () => {
  await hs.close();
});

const call = (
  method: string,
  path: string,
  opts: { token?: string | null; body?: unknown } = {},
): Promise<{ status: number; json: Record<string, unknown> }> =>
  hsCall(hs.url, method, path, { ...opts, token: opts.token === undefined ? 'tok-a' : opts.token });

const room = encodeURIComponent(ROOM);
type Ev = {
  event_id: string;
  type: string;
  content: Record<string, unknown>;
  unsigned: Record<string, unknown>;
};

describe('auth', () => {
  it('401 M_MISSING_TOKEN without a token, M_UNKNOWN_TOKEN with a wrong one', async () => {
    expect(await call('GET', '/_matrix/client/v3/account/whoami', { token: null })).toMatchObject({
      status: 401,
      json: { errcode: 'M_MISSING_TOKEN' },
    });
    expect(await call('GET', '/_matrix/client/v3/account/whoami', { token: 'nope' })).toMatchObject(
      {
        status: 401,
        json: { errcode: 'M_UNKNOWN_TOKEN' },
      },
    );
    expect((await call('GET', '/_matrix/client/v3/account/whoami')).json['user_id']).toBe(A);
  });

  it('password login makes a new session (device and token); requests never record it', async () => {
    const ok = await call('POST', '/_matrix/client/v3/login', {
      token: null,
      body: {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: 'bob' },
        password: 'pw',
      },
    });
    expect(ok.json['user_id']).toBe(B);
    const token = String(ok.json['access_token']);
    expect(token).not.toBe('tok-b');
    expect(hs.devices(B)).toContain(ok.json['device_id']);
    const whoami = await fetch(`${hs.url}/_matrix/client/v3/account/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await whoami.json()).toMatchObject({ user_id: B, device_id: ok.json['device_id'] });
    const bad = await call('POST', '/_matrix/client/v3/login', {
      token: null,
      body: { type: 'm.login.password', user: B, password: 'wrong' },
    });
    expect(bad.status).toBe(403);
    await fetch(`${hs.url}/_matrix/client/v3/account/whoami?access_token=tok-a`);
    expect(JSON.stringify(hs.requests)).not.toContain('tok-a');
  });

  it('unknown endpoints answer 404 M_UNRECOGNIZED', async () => {
    expect(await call('GET', '/_matrix/client/v3/nothing')).toMatchObject({
      status: 404,
      json: { errcode: 'M_UNRECOGNIZED' },
    });
  });
});

describe('sending', () => {
  it('send is idempotent per access token and transaction id', async () => {
    const path = `/_matrix/client/v3/rooms/${room}/send/m.room.message/txn1`;
    const first = await call('PUT', path, { body: { msgtype: 'm.text', body: 'x' } });
    const again = await call('PUT', path, { body: { msgtype: 'm.text', body: 'x' } });
    const other = await call('PUT', path, {
      token: 'tok-b',
      body: { msgtype: 'm.text', body: 'x' },
    });
    expect(again.json['event_id']).toBe(first.json['event_id']);
    expect(other.json['event_id']).not.toBe(first.json['event_id']);
    expect(hs.timeline(ROOM).filter((e) => e.content['body'] === 'x')).toHaveLength(2);
  });

  it('an event over 64 KiB is refused with 413 M_TOO_LARGE, as Synapse does; one under it is stored', async () => {
    const send = (txn: string, body: string) =>
      call('PUT', `/_matrix/client/v3/rooms/${room}/send/m.room.message/${txn}`, {
        body: { msgtype: 'm.notice', body },
      });
    const big = await send('big', 'x'.repeat(65_000));
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({ errcode: 'M_TOO_LARGE' });
    const fits = await send('fits', 'x'.repeat(60_000));
    expect(fits.status).toBe(200);
    expect(hs.timeline(ROOM).some((e) => e.event_id === fits.json['event_id'])).toBe(true);
  });

  it('a non-member cannot send or read', async () => {
    hs.createRoom({ id: '!b:hs.test', members: [B] });
    const r = encodeURIComponent('!b:hs.test');
    expect(
      (await call('PUT', `/_matrix/client/v3/rooms/${r}/send/m.room.message/t`, { body: {} }))
        .status,
    ).toBe(403);
    expect((await call('GET', `/_matrix/client/v3/rooms/${r}/joined_members`)).status).toBe(403);
  });

  it('redaction empties the content, sets redacted_because, and hides the relation', async () => {
    const msg = hs.sayAs(B, ROOM, 'hello');
    const reaction = hs.reactAs(A, ROOM, msg, '👍');
    const rel = `/_matrix/client/v1/rooms/${room}/relations/${encodeURIComponent(msg)}/m.annotation/m.reaction`;
    expect(((await call('GET', rel)).json['chunk'] as Ev[]).map((e) => e.event_id)).toEqual([
      reaction,
    ]);
    const red = await call(
      'PUT',
      `/_matrix/client/v3/rooms/${room}/redact/${encodeURIComponent(reaction)}/t1`,
      {
        body: { reason: 'oops' },
      },
    );
    const ev = (
      await call('GET', `/_matrix/client/v3/rooms/${room}/event/${encodeURIComponent(reaction)}`)
    ).json as Ev;
    expect(ev.content).toEqual({});
    expect((ev.unsigned['redacted_because'] as Ev).event_id).toBe(red.json['event_id']);
    expect((await call('GET', rel)).json['chunk']).toEqual([]);
    const redaction = hs.event(String(red.json['event_id']));
    expect(redaction).toMatchObject({ type: 'm.room.redaction', redacts: reaction });
  });
});

describe('room state', () => {
  it('state, state/{type}/{key}, joined_members and members', async () => {
    const state = (await call('GET', `/_matrix/client/v3/rooms/${room}/state`))
      .json as unknown as Ev[];
    expect(state.map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'm.room.create',
        'm.room.member',
        'm.room.power_levels',
        'm.room.join_rules',
      ]),
    );
    expect(
      (await call('GET', `/_matrix/client/v3/rooms/${room}/state/m.room.join_rules/`)).json,
    ).toEqual({
      join_rule: 'invite',
    });
    expect(
      (await call('GET', `/_matrix/client/v3/rooms/${room}/state/m.room.encryption/`)).status,
    ).toBe(404);
    expect(
      Object.keys(
        (await call('GET', `/_matrix/client/v3/rooms/${room}/joined_members`)).json[
          'joined'
        ] as object,
      ),
    ).toEqual([A, B]);
    expect(
      ((await call('GET', `/_matrix/client/v3/rooms/${room}/members`)).json['chunk'] as Ev[])
        .length,
    ).toBe(2);
  });

  it('an encrypted room carries m.room.encryption', async () => {
    hs.createRoom({ id: '!e:hs.test', members: [A], encrypted: true });
    const r = encodeURIComponent('!e:hs.test');
    expect(
      (await call('GET', `/_matrix/client/v3/rooms/${r}/state/m.room.encryption/`)).json,
    ).toEqual({
      algorithm: 'm.megolm.v1.aes-sha2',
    });
  });
});

describe('sync', () => {
  const sync = async (q: string) => (await call('GET', `/_matrix/client/v3/sync?${q}`)).json;
  type Joined = {
    timeline: { events: Ev[]; limited: boolean; prev_batch: string };
    state: { events: Ev[] };
  };
  const joined = (s: Record<string, unknown>) =>
    (s['rooms'] as { join: Record<string, Joined> }).join[ROOM];

  it('the first sync honours the filter timeline limit and sends the state before the timeline', async () => {
    for (let i = 0; i < 6; i += 1) hs.sayAs(A, ROOM, `m${i}`);
    const filter = encodeURIComponent(JSON.stringify({ room: { timeline: { limit: 3 } } }));
    const s = await sync(`filter=${filter}`);
    const j = joined(s);
    expect(j?.timeline.events.map((e) => e.content['body'])).toEqual(['m3', 'm4', 'm5']);
    expect(j?.timeline.limited).toBe(true);
    expect(j?.state.events.map((e) => e.type)).toContain('m.room.join_rules');
    expect(j?.timeline.events.every((e) => typeof e.unsigned['age'] === 'number')).toBe(true);
    expect(s).toMatchObject({ account_data: { events: [] }, to_device: { events: [] } });
  });

  it('a stored filter (POST /user/{id}/filter) is used by id', async () => {
    const made = await call('POST', `/_matrix/client/v3/user/${encodeURIComponent(A)}/filter`, {
      body: { room: { timeline: { limit: 1 } } },
    });
    const id = String(made.json['filter_id']);
    expect(
      (await call('GET', `/_matrix/client/v3/user/${encodeURIComponent(A)}/filter/${id}`)).json,
    ).toEqual({
      room: { timeline: { limit: 1 } },
    });
    expect(joined(await sync(`filter=${id}`))?.timeline.events).toHaveLength(1);
    expect(
      (await call('POST', `/_matrix/client/v3/user/${encodeURIComponent(B)}/filter`, { body: {} }))
        .status,
    ).toBe(403);
  });

  it('long-polls: holds the request until an event arrives, then returns only the new one', async () => {
    const first = await sync('');
    const since = String(first['next_batch']);
    const started = Date.now();
    const pending = sync(`since=${since}&timeout=5000`);
    setTimeout(() => hs.sayAs(B, ROOM, 'late'), 150);
    const next = await pending;
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(joined(next)?.timeline.events.map((e) => e.content['body'])).toEqual(['late']);
    const empty = await sync(`since=${String(next['next_batch'])}&timeout=50`);
    expect(joined(empty)).toBeUndefined();
  });

  it('pushrules answer an empty ruleset; versions and capabilities exist', async () => {
    expect((await call('GET', '/_matrix/client/v3/pushrules/')).json).toMatchObject({
      global: { override: [] },
    });
    expect((await call('GET', '/_matrix/client/versions', { token: null })).status).toBe(200);
    expect((await call('GET', '/_matrix/client/v3/capabilities')).status).toBe(200);
  });
});

describe('messages', () => {
  it('pages forwards and backwards with stream tokens', async () => {
    const ids = [hs.sayAs(A, ROOM, 'one'), hs.sayAs(A, ROOM, 'two'), hs.sayAs(A, ROOM, 'three')];
    const back = await call('GET', `/_matrix/client/v3/rooms/${room}/messages?dir=b&limit=2`);
    expect((back.json['chunk'] as Ev[]).map((e) => e.event_id)).toEqual([ids[2], ids[1]]);
    const fwd = await call(
      'GET',
      `/_matrix/client/v3/rooms/${room}/messages?dir=f&from=${String(back.json['end'])}&limit=10`,
    );
    expect((fwd.json['chunk'] as Ev[]).map((e) => e.event_id)).toEqual([ids[1], ids[2]]);
  });
});

describe('outage switch', () => {
  it('refuse: connections fail while on; the same URL works again after', async () => {
    await hs.outage(true);
    await expect(fetch(`${hs.url}/_matrix/client/versions`)).rejects.toThrow();
    await hs.outage(false);
    expect((await fetch(`${hs.url}/_matrix/client/versions`)).status).toBe(200);
  });

  it('502: a proxy answers for every path while on', async () => {
    await hs.outage(true, '502');
    expect((await fetch(`${hs.url}/_matrix/client/versions`)).status).toBe(502);
    await hs.outage(false);
    expect((await fetch(`${hs.url}/_matrix/client/versions`)).status).toBe(200);
  });
});
