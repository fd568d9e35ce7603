/**
 * iCalendar and vCard documents for tests (a third party's objects, as another client
 * would write them): one VEVENT with UID, DTSTAMP and PRODID, or one vCard 3.0 with a UID.
 */

/** One iCalendar document holding one VEVENT of these lines (UID, DTSTAMP, PRODID added). */
export function ics(uid: string, lines: readonly string[]): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//Broker tests//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20261201T000000Z',
    ...lines,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

/** One vCard 3.0 of these lines (UID added). */
export function vcard(uid: string, lines: readonly string[]): string {
  return ['BEGIN:VCARD', 'VERSION:3.0', `UID:${uid}`, ...lines, 'END:VCARD', ''].join('\r\n');
}
