/**
 * The fake cannot drift: every case of cases.ts runs on the fake Nextcloud and on the
 * real one, from empty homes, and what the broker reads of each answer must be the same.
 * A difference fails the case, naming each request that was answered differently. Where
 * they differ, the fake is fixed to match the real server, never the other way round.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { startFakeNextcloud, type FakeNextcloud, type Series } from '../../../fakes/nextcloud.js';
import { seriesOf } from '../series.js';
import { realServer } from '../server.js';
import { CASES } from './cases.js';
import { Dav } from '../dav.js';
import { shareWith } from '../rig.js';
import {
  differences,
  RECEIVED_FILE,
  requestsOf,
  runCase,
  type Case,
  type Observed,
} from './steps.js';
import { createAddressBook, createCalendar, removeCollection } from '../groupware.js';

const real = realServer();
/** The series the fake answers as: the real server's, read from its status.php. */
let series: Series = 34;

/** The second user makes each folder of `c.received` and shares it with the user. */
async function shareOnReal(c: Case): Promise<void> {
  const other = new Dav(real.url, real.other);
  for (const folder of c.received ?? []) {
    await other.writeFile(`${folder}/${RECEIVED_FILE.name}`, RECEIVED_FILE.content);
    await shareWith(real, 'other', folder);
  }
}

async function onFake(c: Case): Promise<ReturnType<typeof runCase>> {
  const fake: FakeNextcloud = await startFakeNextcloud({
    user: real.owner.user,
    password: 'fake-app-password-0123456789abcdef',
    series,
  });
  try {
    for (const folder of c.received ?? []) {
      await fake.writeFile(`${folder}/${RECEIVED_FILE.name}`, RECEIVED_FILE.content);
      await fake.receiveShare(folder, {
        owner: real.other.user,
        ownerQuota: c.sharerQuota?.bytes ?? null,
      });
    }
    if (c.filesLockOff === true) fake.faults.filesLock = false;
    if (c.quota !== undefined) {
      fake.faults.quotaBytes = c.quota.bytes;
      fake.setQuota(c.quota.bytes);
    }
    for (const name of c.calendars ?? []) fake.createCalendar(name);
    for (const name of c.addressbooks ?? []) fake.createAddressBook(name);
    return await runCase(
      { url: fake.url, account: { user: fake.user, password: fake.password } },
      c,
    );
  } finally {
    await fake.close();
  }
}

/** The case's calendars and address books, made afresh (a run cut short may have left them). */
async function collectionsOnReal(c: Case, make: boolean): Promise<void> {
  for (const name of c.calendars ?? []) {
    await removeCollection(real.url, real.owner, 'calendars', name);
    if (make) await createCalendar(real, real.owner.user, name);
  }
  for (const name of c.addressbooks ?? []) {
    await removeCollection(real.url, real.owner, 'addressbooks', name);
    if (make) await createAddressBook(real, real.owner.user, name);
  }
}

async function onReal(c: Case): Promise<ReturnType<typeof runCase>> {
  const sharer = c.sharerQuota?.occ;
  if (sharer !== undefined)
    await real.occ('user:setting', real.other.user, 'files', 'quota', sharer);
  try {
    await shareOnReal(c);
    await collectionsOnReal(c, true);
    try {
      return await onRealFiles(c);
    } finally {
      await collectionsOnReal(c, false);
    }
  } finally {
    if (sharer !== undefined)
      await real.occ('user:setting', real.other.user, 'files', 'quota', 'none');
  }
}

async function onRealFiles(c: Case): Promise<ReturnType<typeof runCase>> {
  if (c.quota === undefined) return onRealApps(c);
  await real.occ('user:setting', real.owner.user, 'files', 'quota', c.quota.occ);
  try {
    return await onRealApps(c);
  } finally {
    await real.occ('user:setting', real.owner.user, 'files', 'quota', 'none');
  }
}

async function onRealApps(c: Case): Promise<ReturnType<typeof runCase>> {
  if (c.filesLockOff !== true) return runCase({ url: real.url, account: real.owner }, c);
  await real.setApp('files_lock', false);
  try {
    return await runCase({ url: real.url, account: real.owner }, c);
  } finally {
    await real.setApp('files_lock', true);
  }
}

/**
 * Empty homes for the next case. Over WebDAV, both users at once, it takes a fraction of
 * the kit's reset (which starts a dozen processes); the kit's reset still runs when that
 * fails (a lock left behind) and before the first case.
 */
async function emptyHomes(): Promise<void> {
  const emptied = await Promise.all(
    [real.owner, real.other].map((account) => new Dav(real.url, account).emptyHome()),
  );
  if (!emptied.every(Boolean)) await real.reset();
}

/**
 * The case on both servers from empty homes, side by side (their pauses overlap). Both
 * runs end before anything else happens: a failed side does not leave the other running
 * into the next reset.
 */
async function bothSides(c: Case): Promise<[Observed[], Observed[]]> {
  await emptyHomes();
  const [fake, seen] = await Promise.allSettled([onFake(c), onReal(c)]);
  if (fake.status === 'fulfilled' && seen.status === 'fulfilled') return [fake.value, seen.value];
  throw [fake, seen].flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))[0];
}

describe('the fake Nextcloud answers like the real one', () => {
  beforeAll(async () => {
    series = await seriesOf(real.url);
    await real.reset();
  });
  // No reset after the last case: the next file of the project starts with its own.

  it('covers every request shape (the comparison is not vacuous)', () => {
    const steps = CASES.flatMap(requestsOf);
    expect(steps.length).toBeGreaterThan(100);
    for (const method of [
      'PROPFIND',
      'SEARCH',
      'GET',
      'PUT',
      'MKCOL',
      'MOVE',
      'DELETE',
      'LOCK',
      'UNLOCK',
      'REPORT',
    ])
      expect(
        steps.some((s) => s.method === method),
        method,
      ).toBe(true);
  });

  it.each(CASES)('$name', async (c) => {
    const [fake, seen] = await bothSides(c);
    expect(seen.length).toBe(requestsOf(c).length);
    const diff = differences(fake, seen);
    expect(diff, `the fake answered differently:\n${diff.join('\n')}`).toHaveLength(0);
  });
});
