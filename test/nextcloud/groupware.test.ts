/**
 * The client's calendar and address book verbs against the fake Nextcloud (held to the
 * real server by the differential cases): what each verb sends, what it refuses before
 * sending, and how it reads odd answers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventDocument } from '../../broker/nextcloud/calendar-create.js';
import { parseComponents } from '../../broker/nextcloud/content-lines.js';
import { groupwareUrl } from '../../broker/nextcloud/groupware-url.js';
import { rejectsWith, startRig, type Rig } from './helpers.js';
import { ics } from '../../support/ical.js';

let rig: Rig;

/** A calendar `runaway` holding an event that repeats every minute without end. */
function addRunaway(on: Rig): void {
  on.fake.createCalendar('runaway');
  on.fake.addObject(
    'calendar',
    'runaway',
    'm.ics',
    ics('m', ['DTSTART:20261201T000000Z', 'RRULE:FREQ=MINUTELY']),
  );
}
const at = (iso: string): number => Date.parse(iso);
const DECEMBER = { start: at('2026-12-01T00:00:00Z'), end: at('2027-01-01T00:00:00Z') };

beforeAll(async () => {
  rig = await startRig();
  rig.fake.createCalendar('personal');
  rig.fake.createCalendar('tasks', { components: ['VTODO'] });
  rig.fake.createCalendar('team_shared_by_bob', { sharedBy: 'bob', displayName: 'team (bob)' });
  rig.fake.createCalendar('team_shared_by_bob');
  addRunaway(rig);
  for (let day = 1; day <= 5; day++)
    rig.fake.addObject(
      'calendar',
      'personal',
      `d${day}.ics`,
      ics(`d${day}`, [
        `SUMMARY:Day ${day}`,
        `DTSTART:2026120${day}T090000Z`,
        `DTEND:2026120${day}T100000Z`,
      ]),
    );
  rig.fake.createAddressBook('contacts');
  for (let n = 1; n <= 3; n++)
    rig.fake.addObject(
      'addressbook',
      'contacts',
      `c${n}.vcf`,
      `BEGIN:VCARD\r\nVERSION:3.0\r\nUID:c${n}\r\nFN:Ann ${n}\r\nEMAIL:ann${n}@example.org\r\nNOTE:note ${n}\r\nEND:VCARD\r\n`,
    );
});
afterAll(() => rig.close());
beforeEach(() => rig.sent());

describe('collection names are one component', () => {
  it.each(['a/b', '..', '.', 'a\\b', '', 'a\nb'])(
    'refuses %j before sending anything',
    async (name) => {
      await rejectsWith(rig.client.calendarEvents(name, DECEMBER), 'invalid_path');
      expect(rig.sent()).toEqual([]);
    },
  );

  it('builds the calendar and address book URLs from encoded components', () => {
    expect(groupwareUrl('http://h/nc/', 'alice', 'calendar', ['my cal', 'x.ics']).pathname).toBe(
      '/nc/remote.php/dav/calendars/alice/my%20cal/x.ics',
    );
    expect(groupwareUrl('http://h', 'alice', 'contacts', ['b']).pathname).toBe(
      '/remote.php/dav/addressbooks/users/alice/b/',
    );
  });
});

describe('collections', () => {
  it('lists calendars, the birthday calendar an address book brings, and marks a name used twice', async () => {
    const calendars = await rig.client.collections('calendar');
    expect(calendars.map((c) => [c.name, c.ambiguous])).toEqual([
      ['contact_birthdays', false],
      ['personal', false],
      ['runaway', false],
      ['tasks', false],
      ['team_shared_by_bob', true],
      ['team_shared_by_bob', true],
    ]);
  });

  it('refuses an ambiguous calendar and a tasks list before sending the REPORT', async () => {
    await rejectsWith(
      rig.client.calendarEvents('team_shared_by_bob', DECEMBER),
      'collection_ambiguous',
      false,
    );
    await rejectsWith(rig.client.calendarEvents('tasks', DECEMBER), 'not_a_collection', false);
    expect(rig.sent().filter((r) => r.startsWith('REPORT'))).toEqual([]);
  });
});

describe('calendar events', () => {
  it('pages in start order with a cursor bound to the calendar and the window', async () => {
    const first = await rig.client.calendarEvents('personal', DECEMBER, { pageSize: 2 });
    expect(first.events.map((e) => e.title)).toEqual(['Day 1', 'Day 2']);
    const second = await rig.client.calendarEvents('personal', DECEMBER, {
      pageSize: 2,
      cursor: first.next,
    });
    expect(second.events.map((e) => e.title)).toEqual(['Day 3', 'Day 4']);
    await rejectsWith(
      rig.client.calendarEvents('runaway', DECEMBER, { cursor: first.next }),
      'bad_cursor',
    );
    await rejectsWith(
      rig.client.calendarEvents(
        'personal',
        { ...DECEMBER, start: DECEMBER.start + 1000 },
        { cursor: first.next },
      ),
      'bad_cursor',
    );
  });

  it('refuses a window over 366 days or ending before it starts, before sending anything', async () => {
    await rejectsWith(
      rig.client.calendarEvents('personal', { start: 0, end: 367 * 86_400_000 }),
      'invalid_argument',
    );
    await rejectsWith(
      rig.client.calendarEvents('personal', { start: 10, end: 10 }),
      'invalid_argument',
    );
    expect(rig.sent()).toEqual([]);
  });

  it('on 34, a runaway event is left out and the rest of the calendar answered', async () => {
    rig.fake.addObject(
      'calendar',
      'runaway',
      'ok.ics',
      ics('ok', ['SUMMARY:Still here', 'DTSTART:20261202T090000Z', 'DTEND:20261202T100000Z']),
    );
    const page = await rig.client.calendarEvents('runaway', DECEMBER);
    expect(page.events.map((e) => e.title)).toEqual(['Still here']);
  });

  it('on 29, reports the runaway-recurrence 500 as unreadable, and asks only once', async () => {
    const old = await startRig({}, 29);
    try {
      addRunaway(old);
      const err = await rejectsWith(
        old.client.calendarEvents('runaway', DECEMBER),
        'calendar_unreadable',
        false,
      );
      expect(err.message).toMatch(/ask the owner/);
      expect(old.sent().filter((r) => r.startsWith('REPORT'))).toHaveLength(1);
    } finally {
      await old.close();
    }
  });
});

describe('creating an event', () => {
  it('escapes every text so no value becomes a property of its own', () => {
    const doc = eventDocument(
      {
        title: 'x\r\nATTENDEE:mailto:a@b\nORGANIZER:c',
        start: 0,
        end: 1000,
        description: 'a;b,c\\d',
      },
      'u',
      0,
    );
    const lines = parseComponents(doc)[0]?.children[0]?.lines.map((l) => l.name);
    expect(lines).toEqual(['UID', 'DTSTAMP', 'SUMMARY', 'DTSTART', 'DTEND', 'DESCRIPTION']);
    expect(doc.split('\r\n').every((l) => Buffer.byteLength(l) <= 75)).toBe(true);
  });

  it('sends If-None-Match: * and reads back what was stored', async () => {
    const created = await rig.client.createEvent('personal', {
      title: 'Zo\u00eb\u2019s party, finally',
      start: at('2026-12-20T18:00:00Z'),
      end: at('2026-12-20T23:00:00Z'),
    });
    expect(created.event).toMatchObject({
      title: 'Zo\u00eb\u2019s party, finally',
      start: '2026-12-20T18:00:00Z',
    });
    expect(created.changed).toEqual([]);
    const put = rig.fake.requests.find((r) => r.method === 'PUT');
    expect(put?.headers['if-none-match']).toBe('*');
    expect(rig.fake.objectOf('calendar', 'personal', created.object)).toContain('UID:');
  });

  it('refuses the birthday calendar (403) as not accepting events', async () => {
    await rejectsWith(
      rig.client.createEvent('contact_birthdays', { title: 't', start: 0, end: 1000 }),
      'forbidden',
    );
  });
});

describe('contacts search', () => {
  it('asks for one more card than the limit and says when there were more', async () => {
    const { contacts, truncated } = await rig.client.searchContacts('contacts', 'ann', {
      limit: 2,
    });
    expect(contacts).toHaveLength(2);
    expect(truncated).toBe(true);
    const report = rig.fake.requests.filter((r) => r.method === 'REPORT').at(-1);
    expect(report).toBeDefined();
  });

  it('never asks for notes unless asked, and sends the query in NFC', async () => {
    const plain = await rig.client.searchContacts('contacts', 'ANN 1');
    expect(plain.contacts).toEqual([
      { uid: 'c1', name: 'Ann 1', emails: ['ann1@example.org'], phones: [] },
    ]);
    const withNotes = await rig.client.searchContacts('contacts', 'ann 1', { includeText: true });
    expect(withNotes.contacts[0]?.note).toBe('note 1');
  });

  it('refuses an empty query and a missing address book', async () => {
    await rejectsWith(rig.client.searchContacts('contacts', '  '), 'invalid_argument');
    await rejectsWith(rig.client.searchContacts('nobook', 'x'), 'not_found');
  });
});
