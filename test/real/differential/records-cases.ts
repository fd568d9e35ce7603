/**
 * What Nextcloud keeps beside the files, as reconciliation and undo read it: the
 * Activity app's stream (what each change records, how it merges, how it pages), file
 * versions (made on overwrite, named by mtime, restored by MOVE), the trash bin's names
 * and restores, and the calendar trash bin — each with the request shapes of the
 * broker's verbs (activity.ts, versions.ts, trashbin.ts, calendar-trash.ts). Writes set
 * their mtime (`X-OC-Mtime`), so nothing depends on the clock.
 */
import { CALENDAR_TRASH_QUERY } from '../../../broker/nextcloud/calendar-trash.js';
import { TRASH_BODY } from '../../../broker/nextcloud/trashbin.js';
import { VERSIONS_BODY } from '../../../broker/nextcloud/versions.js';
import type { Case, Step } from './steps.js';

const XML = 'application/xml; charset=utf-8';
const ACTIVITY = '/ocs/v2.php/apps/activity/api/v2/activity';
const CAL = 'diffcal';

const mtime = (seconds: number): Record<string, string> => ({
  'X-OC-Mtime': String(1_700_000_000 + seconds),
});

const write = (name: string, target: string, body: string, at: number, extra: Partial<Step> = {}) =>
  ({ name, method: 'PUT', target, headers: mtime(at), body, ...extra }) satisfies Step;
const mkcol = (name: string, target: string, extra: Partial<Step> = {}): Step => ({
  name,
  method: 'MKCOL',
  target,
  ...extra,
});
const move = (name: string, from: string, to: string): Step => ({
  name,
  method: 'MOVE',
  target: from,
  headers: { Destination: `{files}/${to}`, Overwrite: 'F' },
});
const del = (name: string, target: string): Step => ({ name, method: 'DELETE', target });
const read = (name: string, target: string): Step => ({
  name,
  method: 'GET',
  target,
  read: { content: true },
});

/** readActivity's request: one page of the stream. */
const activity = (name: string, query: string, extra: Partial<Step> = {}): Step => ({
  name,
  method: 'GET',
  target: `${ACTIVITY}?format=json&${query}`,
  headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
  ...extra,
});

/** The same request on the account's own changes (`/activity/self`: reconciliation's). */
const own = (name: string, query: string, extra: Partial<Step> = {}): Step => ({
  ...activity(name, query, extra),
  target: `${ACTIVITY}/self?format=json&${query}`,
});

/**
 * The folder `at` made, then the newest activity row read: where a case's own changes
 * start (`{activity:start}`). Two changes come before the read, so that both servers have
 * more than that one row (and a `Link`).
 */
const markAfter = (at: string): Step[] => [
  mkcol('MKCOL', `~/${at}`),
  mkcol('MKCOL (the mark)', `~/${at}0`),
  activity('the newest activity (a mark)', 'limit=1&sort=desc', { activity: 'start' }),
];

/** listVersions's request. */
const versions = (name: string, fileid: string, depth = '1'): Step => ({
  name,
  method: 'PROPFIND',
  target: `/remote.php/dav/versions/{user}/versions/{fileid:${fileid}}`,
  headers: { 'Content-Type': XML, Depth: depth },
  body: VERSIONS_BODY,
});
const version = (fileid: string, at: number): string =>
  `/remote.php/dav/versions/{user}/versions/{fileid:${fileid}}/${1_700_000_000 + at}`;
/** restoreVersion's request. */
const restoreVersion = (name: string, fileid: string, at: number, extra = {}): Step => ({
  name,
  method: 'MOVE',
  target: version(fileid, at),
  headers: { Destination: '{base}/remote.php/dav/versions/{user}/restore/target', ...extra },
});

/** versionSaved's request: the first byte of a version. */
const versionSaved = (name: string, fileid: string, at: number): Step => ({
  name,
  method: 'GET',
  target: version(fileid, at),
  headers: { Range: 'bytes=0-1' },
});

/** listTrash's request. */
const trash = (name: string): Step => ({
  name,
  method: 'PROPFIND',
  target: '/remote.php/dav/trashbin/{user}/trash/',
  headers: { 'Content-Type': XML, Depth: '1' },
  body: TRASH_BODY,
});
/** restoreTrash's request (no `Overwrite`: with `F` it is always 412), or with one. */
const restoreTrash = (name: string, original: string, overwrite: 'F' | 'T' | undefined): Step => ({
  name,
  method: 'MOVE',
  target: `/remote.php/dav/trashbin/{user}/trash/{item:${original}}`,
  headers: {
    Destination: `{trash}/restore/{item:${original}}`,
    ...(overwrite === undefined ? {} : { Overwrite: overwrite }),
  },
});

const ev = (uid: string, summary: string): string =>
  [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//Nextcloud Access Broker//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20261201T000000Z',
    'DTSTART:20261210T090000Z',
    'DTEND:20261210T100000Z',
    `SUMMARY:${summary}`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
const putEvent = (name: string, object: string, body: string): Step => ({
  name,
  method: 'PUT',
  target: `~cal/${CAL}/${object}`,
  headers: { 'Content-Type': 'text/calendar; charset=utf-8' },
  body,
});
/** listCalendarTrash's request. */
const calendarTrash = (name: string, extra: Partial<Step> = {}): Step => ({
  name,
  method: 'REPORT',
  target: '~cal/trashbin/objects/',
  headers: { 'Content-Type': XML, Depth: '1' },
  body: CALENDAR_TRASH_QUERY,
  ...extra,
});

export const RECORDS_CASES: readonly Case[] = [
  {
    name: 'the Activity app records each change (not reads), merged as Nextcloud merges them',
    steps: [
      ...markAfter('A'),
      write('PUT a new file', '~/A/a.txt', 'aaa', 0),
      write('PUT another', '~/A/b.txt', 'bbb', 0),
      read('GET (a read records nothing)', '~/A/a.txt'),
      { name: 'PROPFIND (neither)', method: 'PROPFIND', target: '~/A/', headers: { Depth: '1' } },
      write('PUT a change', '~/A/a.txt', 'a2', 10),
      write('PUT the same file again', '~/A/a.txt', 'a3', 20),
      move('MOVE: a rename', '~/A/a.txt', 'A/a2.txt'),
      move('MOVE to the root, the same name', '~/A/b.txt', 'b.txt'),
      mkcol('MKCOL a subfolder', '~/A/S'),
      move('MOVE into it', '~/A/a2.txt', 'A/S/a2.txt'),
      move('MOVE out of it and rename', '~/A/S/a2.txt', 'c.txt'),
      del('DELETE', '~/b.txt'),
      del('DELETE another', '~/c.txt'),
      restoreTrash('restore one from the trash bin', 'b.txt', undefined),
      activity('the stream since the mark, oldest first', 'since={activity:start}&sort=asc'),
      activity('page 1 of 3 rows', 'since={activity:start}&sort=asc&limit=3', {
        activity: 'page1',
      }),
      activity('page 2 of 3 rows', 'since={activity:page1}&sort=asc&limit=3', {
        activity: 'page2',
      }),
      activity('newest first, 2 rows', 'sort=desc&limit=2'),
      activity('the rest', 'since={activity:page2}&sort=asc&limit=200', { activity: 'end' }),
      activity('after the very last row: 304', 'since={activity:end}&sort=asc'),
      {
        name: 'without OCS-APIRequest: 412',
        method: 'GET',
        target: `${ACTIVITY}?format=json&limit=1`,
      },
    ],
  },
  {
    name: 'the Activity app: the account’s own rows, one per page, read on past a merged entry',
    steps: [
      ...markAfter('R'),
      write('PUT a file', '~/R/r.txt', 'r1', 0),
      write('PUT a change', '~/R/r.txt', 'r2', 10),
      write('PUT another change', '~/R/r.txt', 'r3', 20),
      own('the account’s own since the mark (merged)', 'since={activity:start}&sort=asc'),
      own('one row: the first', 'since={activity:start}&sort=asc&limit=1', { activity: 'r1' }),
      own('one row: the second', 'since={activity:r1}&sort=asc&limit=1', { activity: 'r2' }),
      own('one row: the third', 'since={activity:r2}&sort=asc&limit=1', { activity: 'r3' }),
      own('one row after the last: 304', 'since={activity:r3}&sort=asc&limit=1'),
      own(
        'the page asked again with fewer rows than it read',
        'since={activity:start}&sort=asc&limit=2',
      ),
      own('newest first, one row', 'sort=desc&limit=1'),
    ],
  },
  {
    name: 'the Activity app: changes in a received share, and its trash bin item',
    received: ['Shared'],
    steps: [
      ...markAfter('M'),
      write('PUT into the share', '~/Shared/mine.txt', 'mine', 0),
      write('PUT a change of the sharer’s file', '~/Shared/inner.txt', 'changed', 10),
      del('DELETE the sharer’s file', '~/Shared/inner.txt'),
      activity('the stream since the mark', 'since={activity:start}&sort=asc'),
      trash('the trash bin'),
    ],
  },
  {
    name: 'versions: made on overwrite, named by mtime, replaced at the same mtime, restored by MOVE',
    steps: [
      mkcol('MKCOL', '~/V'),
      write('PUT v1', '~/V/v.txt', 'v1', 0, { fileid: 'v' }),
      versions('the versions of a new file', 'v'),
      write('PUT v2', '~/V/v.txt', 'v2-xx', 100),
      versions('after an overwrite', 'v'),
      write('PUT v3 at the same mtime', '~/V/v.txt', 'v3', 100),
      versions('after an overwrite at the same mtime', 'v'),
      write('PUT v4', '~/V/v.txt', 'v4-yyy', 200),
      versions('after another', 'v'),
      versions('Depth 0', 'v', '0'),
      read('GET the first version', version('v', 0)),
      read('GET the version replaced at the same mtime', version('v', 100)),
      read('GET the entry of the current content', version('v', 200)),
      restoreVersion('MOVE with Overwrite: F', 'v', 0, { Overwrite: 'F' }),
      restoreVersion('MOVE a version that never was', 'v', 50),
      restoreVersion('MOVE the first version to restore/target', 'v', 0),
      {
        name: 'PROPFIND the file',
        method: 'PROPFIND',
        target: '~/V/v.txt',
        headers: { Depth: '0' },
      },
      read('GET the file', '~/V/v.txt'),
      versions('the versions after the restore', 'v'),
      read('GET the content the restore replaced', version('v', 200)),
      read('GET the restored version (its file was taken into place)', version('v', 0)),
      versionSaved('versionSaved: the restored version, read before', 'v', 0),
      versionSaved('versionSaved: a saved version', 'v', 200),
      write('PUT v5 (the restored content is saved again)', '~/V/v.txt', 'v5', 300),
      versionSaved('versionSaved: the restored one, saved again', 'v', 0),
      versionSaved('versionSaved: the entry of the current content', 'v', 300),
      restoreVersion('MOVE the version of v4 to restore/target', 'v', 200),
      versionSaved('versionSaved: the restored version, first read', 'v', 200),
      versionSaved('versionSaved: the restored version, read again', 'v', 200),
      write('PUT an empty file', '~/V/empty.txt', '', 0, { fileid: 'e' }),
      write('PUT over the empty file', '~/V/empty.txt', 'no longer empty', 100),
      versions('the versions of a file that was empty', 'e'),
      read('GET the empty content’s version', version('e', 0)),
      {
        name: 'PROPFIND the versions of an id no file has',
        method: 'PROPFIND',
        target: '/remote.php/dav/versions/{user}/versions/999999999',
        headers: { 'Content-Type': XML, Depth: '1' },
        body: VERSIONS_BODY,
      },
    ],
  },
  {
    name: 'the trash bin: names, restoring onto a taken path, into a folder that is gone',
    steps: [
      mkcol('MKCOL', '~/T'),
      mkcol('MKCOL a folder', '~/T/G'),
      write('PUT', '~/T/t.txt', 'first', 0),
      write('PUT into the folder', '~/T/G/g.txt', 'g', 0),
      del('DELETE the file', '~/T/t.txt'),
      write('PUT another file at its place', '~/T/t.txt', 'second', 0),
      del('DELETE the file in the folder', '~/T/G/g.txt'),
      del('DELETE the folder', '~/T/G'),
      trash('the trash bin'),
      restoreTrash('restore onto the taken path, Overwrite: F', 'T/t.txt', 'F'),
      restoreTrash('restore to a free place, Overwrite: F', 'T/G/g.txt', 'F'),
      trash('the trash bin after the refusal'),
      restoreTrash('restore onto the taken path without Overwrite', 'T/t.txt', undefined),
      {
        name: 'PROPFIND the folder',
        method: 'PROPFIND',
        target: '~/T/',
        headers: { Depth: '1' },
      },
      restoreTrash('restore into a folder that is gone', 'T/G/g.txt', undefined),
      { name: 'PROPFIND the root', method: 'PROPFIND', target: '~/', headers: { Depth: '1' } },
      read('GET the restored file', '~/g.txt'),
      trash('the trash bin at the end'),
    ],
  },
  {
    name: 'the calendar trash bin: DELETE moves, REPORT lists, MOVE restores',
    calendars: [CAL],
    steps: [
      ...markAfter('C'),
      putEvent('PUT an event', 'e1.ics', ev('diff-1', 'First')),
      putEvent('PUT a change', 'e1.ics', ev('diff-1', 'Second')),
      del('DELETE it', `~cal/${CAL}/e1.ics`),
      read('GET it', `~cal/${CAL}/e1.ics`),
      {
        name: 'PROPFIND the trash bin objects',
        method: 'PROPFIND',
        target: '~cal/trashbin/objects/',
        headers: { Depth: '1' },
      },
      calendarTrash('REPORT the trash bin'),
      read('GET the item', '~cal/trashbin/objects/{calitem:diff-1}'),
      putEvent('PUT another event of that name', 'e1.ics', ev('diff-2', 'Other')),
      {
        name: 'MOVE the item to restore/ (its name is taken)',
        method: 'MOVE',
        target: '~cal/trashbin/objects/{calitem:diff-1}',
        headers: { Destination: '{base}/remote.php/dav/calendars/{user}/trashbin/restore/x.ics' },
      },
      del('DELETE the other one (its name is in the trash bin)', `~cal/${CAL}/e1.ics`),
      putEvent('PUT one of a free name', 'e2.ics', ev('diff-3', 'Third')),
      del('DELETE that', `~cal/${CAL}/e2.ics`),
      calendarTrash('REPORT the trash bin again'),
      {
        name: 'MOVE it to restore/',
        method: 'MOVE',
        target: '~cal/trashbin/objects/{calitem:diff-3}',
        headers: {
          Destination: '{base}/remote.php/dav/calendars/{user}/trashbin/restore/{calitem:diff-3}',
        },
      },
      read('GET the restored event', `~cal/${CAL}/e2.ics`),
      activity('the stream since the mark', 'since={activity:start}&sort=asc'),
    ],
  },
];
