/**
 * The link from the approver's 👍 to the approval it made (migration 2): recorded only
 * for an approved request, survives a restart, undone once, only by the approver who
 * reacted and only in the room where they did.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { GrantStore } from '../../broker/grants/index.js';
import { GrantStoreError, SCHEMA_VERSION } from '../../broker/grants/index.js';
import { ReactionLinks } from '../../broker/approval/reaction-links.js';
import {
  approveAll,
  fileStore as tempFileStore,
  memoryStore,
  twoItems,
  writeOldDatabase,
} from '../grants/helpers.js';

const ROOM = '!approvals:hs.test';
const OWNER = '@owner:hs.test';
const THUMB = '$thumb-1';
const by = { roomId: ROOM, approver: OWNER };

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

function approved(store: GrantStore): number {
  const r = store.createRequest(twoItems);
  const d = store.decide(r.id, approveAll);
  if (!d.ok) throw new Error(d.message);
  return r.id;
}

const fileStore = () => tempFileStore(cleanups);
const links = (store: GrantStore) => new ReactionLinks(store.database);

describe('recording which 👍 approved a request', () => {
  it('is looked up by event id, with who, where and when', () => {
    const { store, clock } = memoryStore();
    const id = approved(store);
    expect(links(store).record({ eventId: THUMB, requestId: id, ...by })).toBe(true);
    expect(links(store).requestOf(THUMB)).toBe(id);
    expect(links(store).get(THUMB)).toEqual({
      eventId: THUMB,
      requestId: id,
      roomId: ROOM,
      approver: OWNER,
      createdAt: clock.now(),
      undoneAt: null,
    });
    expect(links(store).requestOf('$other')).toBeUndefined();
  });

  it('survives closing and reopening the database (a broker restart)', () => {
    const { open } = fileStore();
    const first = open();
    const id = approved(first);
    links(first).record({ eventId: THUMB, requestId: id, ...by });
    first.close();
    const second = open();
    expect(links(second).requestOf(THUMB)).toBe(id);
    expect(links(second).take(THUMB, by)).toBe(id);
  });

  it('the same event recorded twice keeps the first link', () => {
    const { store } = memoryStore();
    const a = approved(store);
    const b = approved(store);
    links(store).record({ eventId: THUMB, requestId: a, ...by });
    expect(links(store).record({ eventId: THUMB, requestId: b, ...by })).toBe(false);
    expect(links(store).requestOf(THUMB)).toBe(a);
  });

  it.each([
    ['a pending request', (s: GrantStore) => s.createRequest(twoItems).id],
    [
      'a denied request',
      (s: GrantStore) => {
        const r = s.createRequest(twoItems);
        s.decide(r.id, { kind: 'deny', by: OWNER });
        return r.id;
      },
    ],
    ['a request that does not exist', () => 999],
    ['a request number that is not one', () => 1.5],
  ])('is refused for %s', (_name, make) => {
    const { store } = memoryStore();
    const id = make(store);
    expect(() => links(store).record({ eventId: THUMB, requestId: id, ...by })).toThrow(
      GrantStoreError,
    );
    expect(links(store).get(THUMB)).toBeUndefined();
  });

  it.each([
    ['an empty event id', { eventId: '' }],
    ['an event id longer than any Matrix id', { eventId: `$${'x'.repeat(300)}` }],
    ['an empty room', { roomId: '' }],
    ['an empty approver', { approver: '' }],
  ])('is refused with %s', (_name, bad) => {
    const { store } = memoryStore();
    const id = approved(store);
    expect(() => links(store).record({ eventId: THUMB, requestId: id, ...by, ...bad })).toThrow(
      /needs an event id/,
    );
  });
});

describe('attack: withdrawing an approval that is not yours, or twice', () => {
  it('is undone once: a replayed withdrawal finds nothing', () => {
    const { store, clock } = memoryStore();
    const id = approved(store);
    links(store).record({ eventId: THUMB, requestId: id, ...by });
    clock.advance(1000);
    expect(links(store).take(THUMB, by)).toBe(id);
    expect(links(store).take(THUMB, by)).toBeUndefined();
    expect(links(store).requestOf(THUMB)).toBeUndefined();
    expect(links(store).get(THUMB)?.undoneAt).toBe(clock.now());
  });

  it.each([
    ['someone else', { roomId: ROOM, approver: '@eve:hs.test' }],
    ['the approver, in another room', { roomId: '!elsewhere:hs.test', approver: OWNER }],
    [
      'a look-alike of the approver on another server',
      { roomId: ROOM, approver: '@owner:evil.test' },
    ],
  ])('by %s changes nothing', (_name, who) => {
    const { store } = memoryStore();
    const id = approved(store);
    links(store).record({ eventId: THUMB, requestId: id, ...by });
    expect(links(store).take(THUMB, who)).toBeUndefined();
    expect(links(store).requestOf(THUMB)).toBe(id);
    expect(links(store).take(THUMB, by)).toBe(id);
  });

  it('an unknown or malformed event id is nothing', () => {
    const { store } = memoryStore();
    expect(links(store).take('$never', by)).toBeUndefined();
    expect(links(store).take('', by)).toBeUndefined();
    expect(links(store).take(THUMB, { roomId: '', approver: OWNER })).toBeUndefined();
    expect(links(store).get('')).toBeUndefined();
  });

  it('property: each recorded 👍 yields its request at most once, and only to its approver in its room', () => {
    const rooms = [ROOM, '!other:hs.test'];
    const people = [OWNER, '@eve:hs.test'];
    const events = ['$a', '$b', '$c'];
    fc.assert(
      fc.property(
        fc.subarray(events),
        fc.array(
          fc.record({
            event: fc.constantFrom(...events, '$unknown'),
            roomId: fc.constantFrom(...rooms),
            approver: fc.constantFrom(...people),
          }),
          { maxLength: 20 },
        ),
        (recorded, attempts) => {
          const { store } = memoryStore();
          const linked = new Map<string, number>();
          for (const eventId of recorded) {
            const id = approved(store);
            links(store).record({ eventId, requestId: id, ...by });
            linked.set(eventId, id);
          }
          const undone = new Set<string>();
          for (const a of attempts) {
            const got = links(store).take(a.event, {
              roomId: a.roomId,
              approver: a.approver,
            });
            const allowed =
              linked.has(a.event) &&
              !undone.has(a.event) &&
              a.roomId === ROOM &&
              a.approver === OWNER;
            expect(got).toBe(allowed ? linked.get(a.event) : undefined);
            if (allowed) undone.add(a.event);
          }
          store.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('attack: editing the reaction links behind the store’s back', () => {
  function withRaw() {
    const ctx = fileStore();
    const store = ctx.open();
    const id = approved(store);
    links(store).record({ eventId: THUMB, requestId: id, ...by });
    links(store).record({ eventId: '$undone', requestId: id, ...by });
    links(store).take('$undone', by);
    const pending = store.createRequest(twoItems);
    const raw = new Database(ctx.file);
    cleanups.unshift(() => raw.close());
    return { store, raw, id, pending };
  }

  it.each([
    ['pointing a 👍 at another request', `UPDATE approval_reactions SET request_id = 2`],
    ['moving a 👍 to another room', `UPDATE approval_reactions SET room_id = '!x:hs.test'`],
    ['giving a 👍 to someone else', `UPDATE approval_reactions SET approver = '@eve:hs.test'`],
    ['renaming the event', `UPDATE approval_reactions SET event_id = '$new'`],
    [
      'making an undone 👍 undoable again',
      `UPDATE approval_reactions SET undone_at = NULL WHERE event_id = '$undone'`,
    ],
    [
      'rewriting when it was undone',
      `UPDATE approval_reactions SET undone_at = 1 WHERE event_id = '$undone'`,
    ],
    ['deleting a link', `DELETE FROM approval_reactions`],
    [
      'linking a 👍 to a pending request',
      `INSERT INTO approval_reactions (event_id, request_id, room_id, approver, created_at)
       VALUES ('$p', 2, '${ROOM}', '${OWNER}', 0)`,
    ],
    [
      'linking a 👍 to a request that does not exist',
      `INSERT INTO approval_reactions (event_id, request_id, room_id, approver, created_at)
       VALUES ('$p', 99, '${ROOM}', '${OWNER}', 0)`,
    ],
    [
      'inserting a link already undone',
      `INSERT INTO approval_reactions (event_id, request_id, room_id, approver, created_at, undone_at)
       VALUES ('$p', 1, '${ROOM}', '${OWNER}', 0, 1)`,
    ],
  ])('the schema refuses %s', (_name, sql) => {
    const { raw, store, id } = withRaw();
    const before = raw.prepare('SELECT * FROM approval_reactions ORDER BY event_id').all();
    expect(() => raw.exec(sql)).toThrow();
    expect(raw.prepare('SELECT * FROM approval_reactions ORDER BY event_id').all()).toEqual(before);
    expect(links(store).requestOf(THUMB)).toBe(id);
  });

  it('a link row that does not parse stops the store instead of being trusted', () => {
    const { raw, store } = withRaw();
    raw.pragma('ignore_check_constraints = ON');
    raw.exec('DROP TRIGGER approval_reactions_fixed');
    raw.exec(`UPDATE approval_reactions SET approver = '' WHERE event_id = '${THUMB}'`);
    expect(() => links(store).requestOf(THUMB)).toThrow(/does not match the schema/);
  });
});

describe('migration 2', () => {
  it('upgrades a database written by the previous broker, keeping its grants', () => {
    const { file, open } = fileStore();
    writeOldDatabase(file, 1, 'read', OWNER);
    const store = open();
    expect(store.grant(1)?.state).toBe('active');
    expect(links(store).record({ eventId: THUMB, requestId: 1, ...by })).toBe(true);
    expect(links(store).take(THUMB, by)).toBe(1);
    const raw = new Database(file, { readonly: true });
    cleanups.unshift(() => raw.close());
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  });
});
