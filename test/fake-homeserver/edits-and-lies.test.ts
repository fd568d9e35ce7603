/**
 * The fake homeserver's edits, honest and hostile, over raw HTTP. Honest: it bundles
 * the latest applicable edit as Synapse does (a limited /sync timeline, /messages,
 * /event; spec "Server-side aggregation of m.replace relationships", MSC3925). Hostile
 * (`hs.lie`): everything a homeserver can do to an encrypted room without a key, which
 * the approval tests drive.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeHomeserver, type FakeHomeserver } from '../../fakes/homeserver.js';
import { hsCall } from '../../support/matrix.js';

const A = '@alice:hs.test';
const B = '@bob:hs.test';
const BOT = '@bot:hs.test';
const ROOM = '!r:hs.test';
const room = encodeURIComponent(ROOM);
let hs: FakeHomeserver;

type Ev = {
  event_id: string;
  sender: string;
  type: string;
  content: Record<string, unknown>;
  unsigned: Record<string, unknown>;
};
type Joined = { timeline: { events: Ev[]; limited: boolean; prev_batch: string } };

beforeEach(async () => {
  hs = await startFakeHomeserver({ users: { [A]: 'tok-a', [B]: 'tok-b', [BOT]: 'tok-bot' } });
  hs.createRoom({ id: ROOM, members: [A, B, BOT] });
});
afterEach(async () => {
  await hs.close();
});

const asA = (method: string, path: string, body?: unknown) =>
  hsCall(hs.url, method, path, { token: 'tok-a', ...(body === undefined ? {} : { body }) });

/** A's /sync from `since` (undefined: the first), the room's part of it. */
async function sync(since?: string): Promise<{ next: string; joined: Joined | undefined }> {
  const q = since === undefined ? '' : `?since=${since}&timeout=0`;
  const { json } = await asA('GET', `/_matrix/client/v3/sync${q}`);
  const join = (json['rooms'] as { join: Record<string, Joined> }).join;
  return { next: String(json['next_batch']), joined: join[ROOM] };
}

const bundled = (e: Ev | undefined) =>
  (e?.unsigned['m.relations'] as { 'm.replace'?: Ev } | undefined)?.['m.replace'];

async function event(id: string): Promise<{ status: number; json: Ev }> {
  const r = await asA('GET', `/_matrix/client/v3/rooms/${room}/event/${encodeURIComponent(id)}`);
  return { status: r.status, json: r.json as unknown as Ev };
}

async function messagesBack(): Promise<Ev[]> {
  const r = await asA('GET', `/_matrix/client/v3/rooms/${room}/messages?dir=b&limit=100`);
  return r.json['chunk'] as Ev[];
}

describe('honest: the latest applicable edit is bundled where Synapse bundles it', () => {
  it('in a limited /sync timeline, whole (MSC3925); not in one that is not limited', async () => {
    const { next } = await sync();
    const original = hs.sayAs(A, ROOM, 'deny 3');
    const edit = hs.editAs(A, ROOM, original, 'approve 3');
    const quiet = await sync(next);
    expect(quiet.joined?.timeline.limited).toBe(false);
    const inQuiet = quiet.joined?.timeline.events.find((e) => e.event_id === original);
    expect(inQuiet).toBeDefined();
    expect(bundled(inQuiet)).toBe(undefined);

    const { next: before } = await sync();
    for (let i = 0; i < 12; i += 1) hs.sayAs(B, ROOM, `filler ${i}`);
    const later = hs.sayAs(A, ROOM, 'deny 5');
    const laterEdit = hs.editAs(A, ROOM, later, 'approve 5');
    const gap = await sync(before);
    expect(gap.joined?.timeline.limited).toBe(true);
    const inGap = gap.joined?.timeline.events.find((e) => e.event_id === later);
    expect(bundled(inGap)).toMatchObject({
      event_id: laterEdit,
      sender: A,
      type: 'm.room.message',
      content: { 'm.new_content': { body: 'approve 5' } },
    });
    expect(bundled((await event(original)).json)?.event_id).toBe(edit);
  });

  it('the edit of the same sender and type only, the latest, not a redacted one; /messages too', async () => {
    const original = hs.sayAs(A, ROOM, 'deny 4');
    hs.editAs(B, ROOM, original, 'approve 4'); // another sender: not applicable
    hs.sendAs(A, ROOM, 'm.room.other', {
      'm.relates_to': { rel_type: 'm.replace', event_id: original },
    }); // another type: not applicable
    const first = hs.editAs(A, ROOM, original, 'status');
    const second = hs.editAs(A, ROOM, original, 'help');
    expect(bundled((await event(original)).json)?.event_id).toBe(second);
    hs.redactAs(A, ROOM, second);
    expect(bundled((await event(original)).json)?.event_id).toBe(first);
    const inMessages = (await messagesBack()).find((e) => e.event_id === original);
    expect(bundled(inMessages)?.event_id).toBe(first);
    // An edit gets no bundle of its own.
    expect(bundled((await event(first)).json)).toBe(undefined);
  });

  it('a held /sync answers nothing until released, then carries the gap as a limited timeline', async () => {
    const { next } = await sync();
    const release = hs.holdSync(A);
    let answered = false;
    const pending = asA('GET', `/_matrix/client/v3/sync?since=${next}&timeout=0`).then((r) => {
      answered = true;
      return r;
    });
    for (let i = 0; i < 12; i += 1) hs.sayAs(B, ROOM, `while held ${i}`);
    // Another user's sync is not held.
    const other = await hsCall(hs.url, 'GET', `/_matrix/client/v3/sync?since=${next}&timeout=0`, {
      token: 'tok-b',
    });
    expect(other.status).toBe(200);
    expect(answered).toBe(false);
    release();
    const { json } = await pending;
    const joined = (json['rooms'] as { join: Record<string, Joined> }).join[ROOM];
    expect(joined?.timeline.limited).toBe(true);
    expect(joined?.timeline.events.at(-1)?.content['body']).toBe('while held 11');
  });
});

describe('hostile: what a homeserver can do to an encrypted room', () => {
  it('bundles any edit into unsigned, in any sync, /event and /messages', async () => {
    const { next } = await sync();
    const original = hs.sayAs(A, ROOM, 'thanks, looking');
    hs.lie.bundleEdit(original, {
      sender: B,
      type: 'm.room.message',
      content: {
        'm.new_content': { msgtype: 'm.text', body: 'approve 9' },
        'm.relates_to': { rel_type: 'm.replace', event_id: original },
      },
    });
    const served = (await sync(next)).joined?.timeline.events.find((e) => e.event_id === original);
    expect(bundled(served)).toMatchObject({
      sender: B,
      content: { 'm.new_content': { body: 'approve 9' } },
    });
    expect(bundled((await event(original)).json)?.sender).toBe(B);
    expect(bundled((await messagesBack()).find((e) => e.event_id === original))?.sender).toBe(B);
  });

  it('re-sends a stored event under a new id, with its relation rewritten or not', async () => {
    const original = hs.sendAs(A, ROOM, 'm.room.encrypted', {
      algorithm: 'm.megolm.v1.aes-sha2',
      ciphertext: 'AwgAEgkAAAAA',
      session_id: 'S',
      'm.relates_to': { rel_type: 'm.reference', event_id: '$poll-a' },
    });
    const again = hs.lie.resend(original, {
      relatesTo: { rel_type: 'm.reference', event_id: '$poll-b' },
    });
    expect(again).not.toBe(original);
    const served = (await event(again)).json;
    expect(served).toMatchObject({ sender: A, type: 'm.room.encrypted' });
    expect(served.content['ciphertext']).toBe('AwgAEgkAAAAA');
    expect(served.content['m.relates_to']).toEqual({
      rel_type: 'm.reference',
      event_id: '$poll-b',
    });
    hs.lie.rewriteRelation(original, null);
    expect((await event(original)).json.content['m.relates_to']).toBe(undefined);
  });

  it("answers a client's send with another event's id, and withholds the event it stored", async () => {
    const { next } = await sync();
    const a = hs.sayAs(BOT, ROOM, 'request A');
    const stored = hs.lie.nextSend(A, { answerWith: a, withhold: true });
    const sent = await asA('PUT', `/_matrix/client/v3/rooms/${room}/send/m.room.message/t1`, {
      msgtype: 'm.text',
      body: 'request B',
    });
    expect(sent.json['event_id']).toBe(a);
    const b = await stored;
    expect(b).not.toBe(a);
    expect((await event(b)).status).toBe(404);
    const seen = (await sync(next)).joined?.timeline.events.map((e) => e.event_id) ?? [];
    expect(seen).toContain(a);
    expect(seen).not.toContain(b);
    // Delayed, not dropped: served after what came meanwhile, to a client that synced past it.
    const { next: later } = await sync();
    hs.lie.release(b);
    expect((await sync(later)).joined?.timeline.events.map((e) => e.event_id)).toEqual([b]);
  });

  it('forges what an id serves, and rewrites a re-sent ciphertext (base64 padding)', async () => {
    const real = hs.sayAs(A, ROOM, 'a real message');
    hs.lie.forge(real, { sender: BOT, type: 'm.room.message', content: { body: 'made up' } });
    expect((await event(real)).json).toMatchObject({ sender: BOT, content: { body: 'made up' } });
    const cipher = hs.sendAs(A, ROOM, 'm.room.encrypted', { ciphertext: 'AwgA' });
    const padded = hs.lie.resend(cipher, {
      rewrite: (c) => ({ ...c, ciphertext: `${String(c['ciphertext'])}==` }),
    });
    expect((await event(padded)).json.content['ciphertext']).toBe('AwgA==');
  });

  it("injects clear-text events in anyone's name, the bot's and a non-member's included", async () => {
    const asBot = hs.lie.inject(BOT, ROOM, 'm.room.message', { msgtype: 'm.text', body: 'hi' });
    const asStranger = hs.lie.inject('@nobody:evil.test', ROOM, 'm.room.message', {
      msgtype: 'm.text',
      body: 'approve 1',
    });
    expect((await event(asBot)).json.sender).toBe(BOT);
    expect((await event(asStranger)).json.sender).toBe('@nobody:evil.test');
  });

  it('gives a device id to a new session: the old token stops working, the old keys are gone', async () => {
    const taken = hs.lie.replaceDevice(A, 'DEV1');
    expect(taken.deviceId).toBe('DEV1');
    expect((await asA('GET', '/_matrix/client/v3/account/whoami')).status).toBe(401);
    const whoami = await hsCall(hs.url, 'GET', '/_matrix/client/v3/account/whoami', {
      token: taken.token,
    });
    expect(whoami.json).toMatchObject({ user_id: A, device_id: 'DEV1' });
  });

  it('drops an event: never served again, anywhere', async () => {
    const { next } = await sync();
    const dropped = hs.sayAs(A, ROOM, 'approve 2');
    hs.lie.withhold(dropped);
    hs.sayAs(A, ROOM, 'after');
    expect((await sync(next)).joined?.timeline.events.map((e) => e.content['body'])).toEqual([
      'after',
    ]);
    expect((await messagesBack()).some((e) => e.event_id === dropped)).toBe(false);
    expect((await event(dropped)).status).toBe(404);
  });
});
