/**
 * What binds a decision in an encrypted room to its message and its request, kept in
 * the grant database: the Megolm key of a message (megolm-key.ts), the messages counted
 * once (counted-messages.ts) and the poll nonces (poll.ts, poll-nonces.ts). Both tables
 * survive a restart and refuse, in the schema, to be rewritten or emptied.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CountedMessages,
  MemoryCountedMessages,
} from '../../broker/approval/matrix/counted-messages.js';
import { megolmKey } from '../../broker/approval/matrix/megolm-key.js';
import {
  answerId,
  newNonce,
  parseAnswerId,
  pollContent,
} from '../../broker/approval/matrix/poll.js';
import { MemoryPollNonces, PollNonces } from '../../broker/approval/matrix/poll-nonces.js';
import type { GrantStore } from '../../broker/grants/index.js';
import { fileStore as tempFileStore, twoItems } from '../grants/helpers.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});
const fileStore = () => tempFileStore(cleanups);

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  do {
    const low = v % 128;
    v = Math.floor(v / 128);
    out.push(v > 0 ? low | 0x80 : low);
  } while (v > 0);
  return out;
}

/** A Megolm message as vodozemac writes it: version 3, index, body, MAC, signature. */
function megolmMessage(index: number, body: Uint8Array): string {
  const bytes = [3, 0x08, ...varint(index), 0x12, ...varint(body.length), ...body];
  return Buffer.from([...bytes, ...new Uint8Array(72)])
    .toString('base64')
    .replace(/=+$/, '');
}

const wire = (ciphertext: string, over: Record<string, unknown> = {}) => ({
  algorithm: 'm.megolm.v1.aes-sha2',
  session_id: 'SESSION',
  ciphertext,
  ...over,
});

describe('megolmKey: the session and message index of a Megolm message', () => {
  it('reads the index from the authenticated header, whatever the body (property)', () => {
    fc.assert(
      fc.property(fc.nat({ max: 0xffff_ffff }), fc.uint8Array({ maxLength: 64 }), (i, body) => {
        expect(megolmKey(wire(megolmMessage(i, body)))).toEqual({ sessionId: 'SESSION', index: i });
      }),
    );
  });

  it('attack: base64 padding added to the ciphertext does not make another message', () => {
    const plain = megolmMessage(300, new Uint8Array(17));
    const padded = plain + '='.repeat((4 - (plain.length % 4)) % 4);
    expect(megolmKey(wire(padded))).toEqual(megolmKey(wire(plain)));
  });

  it('is undefined for anything else: another algorithm or version, no index, a varint past 32 bits, not base64', () => {
    const good = megolmMessage(5, new Uint8Array(4));
    expect(megolmKey(wire(good, { algorithm: 'm.olm.v1.curve25519-aes-sha2' }))).toBe(undefined);
    expect(megolmKey(wire(good, { session_id: '' }))).toBe(undefined);
    const bytes = Buffer.from(good, 'base64');
    expect(megolmKey(wire(Buffer.from([2, ...bytes.subarray(1)]).toString('base64')))).toBe(
      undefined,
    );
    expect(megolmKey(wire(Buffer.from([3, 0x12, ...bytes.subarray(2)]).toString('base64')))).toBe(
      undefined,
    );
    const tooBig = Buffer.from([3, 0x08, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0]).toString('base64');
    expect(megolmKey(wire(tooBig))).toBe(undefined);
    const endless = Buffer.from([3, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).toString('base64');
    expect(megolmKey(wire(endless))).toBe(undefined);
    // The URL-safe alphabet and whitespace are not what vodozemac decodes.
    expect(megolmKey(wire(`${good.slice(0, 4)}-_${good.slice(6)}`))).toBe(undefined);
    expect(megolmKey(wire(` ${good}`))).toBe(undefined);
    expect(megolmKey({ ...wire(good), ciphertext: 7 })).toBe(undefined);
    expect(megolmKey(null)).toBe(undefined);
  });
});

describe('counted messages: each counts once, across a restart', () => {
  it('a second count of the same session and index names the event it was counted under', () => {
    const f = fileStore();
    const counted = new CountedMessages(f.open().database);
    expect(counted.count({ sessionId: 'S', index: 4 }, '$first')).toEqual({ first: true });
    expect(counted.count({ sessionId: 'S', index: 5 }, '$next')).toEqual({ first: true });
    expect(counted.count({ sessionId: 'T', index: 4 }, '$other-session')).toEqual({ first: true });
    expect(counted.count({ sessionId: 'S', index: 4 }, '$again')).toEqual({
      first: false,
      firstEventId: '$first',
    });
    // A restart: another connection to the same file.
    const after = new CountedMessages(f.open().database);
    expect(after.count({ sessionId: 'S', index: 4 }, '$after-restart')).toEqual({
      first: false,
      firstEventId: '$first',
    });
  });

  it('the schema refuses to rewrite or delete a counted message', () => {
    const store = fileStore().open();
    new CountedMessages(store.database).count({ sessionId: 'S', index: 1 }, '$e');
    const db = store.database.db;
    expect(() => db.exec("UPDATE approval_messages SET event_id = '$x'")).toThrow(
      /never rewritten/,
    );
    expect(() => db.exec('DELETE FROM approval_messages')).toThrow(/never deleted/);
  });

  it('in memory (a store without a database) the same rule holds until a restart', () => {
    const counted = new MemoryCountedMessages();
    expect(counted.count({ sessionId: 'S', index: 0 }, '$a')).toEqual({ first: true });
    expect(counted.count({ sessionId: 'S', index: 0 }, '$b')).toEqual({
      first: false,
      firstEventId: '$a',
    });
  });
});

describe('poll nonces: the request a vote names, with the nonce its poll carried', () => {
  const nonce = 'ab'.repeat(16);

  it('answer ids name the request and the nonce; nothing else parses (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('approve' as const, 'deny' as const),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        (answer, request, bytes) => {
          const n = newNonce(() => bytes);
          expect(n).toMatch(/^[0-9a-f]{32}$/);
          expect(parseAnswerId(answerId(answer, request, n))).toEqual({
            answer,
            requestId: request,
            nonce: n,
          });
        },
      ),
    );
    for (const other of [
      'approve',
      'deny',
      `approve-1-${'a'.repeat(31)}`,
      `approve-01-${nonce}`,
      `revoke-1-${nonce}`,
      `approve-1-${nonce.toUpperCase()}`,
      `approve-99999999999999999-${nonce}`,
    ]) {
      expect(parseAnswerId(other)).toBe(undefined);
    }
    expect(() => newNonce(() => new Uint8Array(8))).toThrow();
  });

  it("the poll's answers carry the nonce; its text shows the request", () => {
    const content = pollContent(7, nonce) as Record<string, { answers: { id: string }[] }>;
    const ids = content['org.matrix.msc3381.poll.start']?.answers.map((a) => a.id);
    expect(ids).toEqual([`approve-7-${nonce}`, `deny-7-${nonce}`]);
    expect(JSON.stringify(content)).toContain('Request 7');
  });

  function request(store: GrantStore): number {
    return store.createRequest(twoItems).id;
  }

  it('kept across a restart; the poll id the homeserver answered with, once, and for one poll only', () => {
    const f = fileStore();
    const store = f.open();
    const polls = new PollNonces(store.database);
    const a = request(store);
    const b = request(store);
    polls.create(a, nonce);
    polls.create(b, 'cd'.repeat(16));
    expect(polls.posted(a, '$poll-a')).toBe(true);
    // The homeserver answers B's poll with A's poll id: not B's.
    expect(polls.posted(b, '$poll-a')).toBe(false);
    expect(polls.requestOfPoll('$poll-a')).toBe(a);
    const after = new PollNonces(f.open().database);
    expect(after.nonceOf(a)).toBe(nonce);
    expect(after.nonceOf(b)).toBe('cd'.repeat(16));
    expect(after.requestOfPoll('$poll-a')).toBe(a);
    expect(after.nonceOf(999)).toBe(undefined);
    expect(() => after.create(a, 'ef'.repeat(16))).toThrow();
  });

  it('the schema refuses a nonce for no request, a rewritten nonce, a second poll id, a delete', () => {
    const store = fileStore().open();
    const polls = new PollNonces(store.database);
    expect(() => polls.create(999, nonce)).toThrow(/FOREIGN KEY/);
    const a = request(store);
    polls.create(a, nonce);
    polls.posted(a, '$p');
    const db = store.database.db;
    expect(() => db.exec(`UPDATE approval_polls SET nonce = '${'00'.repeat(16)}'`)).toThrow(
      /never rewritten/,
    );
    expect(() => db.exec("UPDATE approval_polls SET poll_event_id = '$q'")).toThrow(/posted once/);
    expect(() => db.exec('DELETE FROM approval_polls')).toThrow(/never deleted/);
  });

  it('in memory the same rules hold until a restart', () => {
    const polls = new MemoryPollNonces();
    polls.create(1, nonce);
    expect(polls.posted(1, '$p')).toBe(true);
    expect(polls.posted(2, '$q')).toBe(false);
    expect(polls.requestOfPoll('$p')).toBe(1);
    expect(() => polls.create(1, nonce)).toThrow();
  });
});
