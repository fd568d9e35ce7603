/**
 * Taking back what an operation did beside files: a calendar event the agent created
 * goes to the calendar's trash bin (a DELETE; Nextcloud keeps it there, restorable),
 * while it is as it was created (its ETag, a hash of its data); a lock a checkout left
 * is released, through the broker's own release of checkout locks (its `release_lock`
 * lines record the requests). Security: as for files (files.ts), nothing is destroyed
 * and an event edited since is left to the owner.
 */
import type { EffectRecord } from '../../audit/changes.js';
import type { CheckoutLockRecord } from '../../base/domain.js';
import { iso } from '../../base/time.js';
import type { NextcloudPort } from '../ports.js';
import type { RecordedOperation } from './scan.js';
import { changedSince, notUndoable, wouldUndo, type Undoing } from './undoing.js';

/** A new calendar event: to the calendar's trash bin, while it is as it was created. */
export async function undoEvent(
  client: NextcloudPort,
  op: RecordedOperation,
  effect: Extract<EffectRecord, { kind: 'event' }>,
  dryRun: boolean,
): Promise<Undoing> {
  const { calendar, object, etag } = effect;
  if (etag === null)
    return notUndoable(
      'its record holds no ETag of the event, so undo cannot tell whether it was edited since',
    );
  const now = await client.eventEtag(calendar, object);
  if (now === null)
    return changedSince(`the event "${object}" is no longer in calendar "${calendar}"`);
  if (now !== etag)
    return changedSince(`the event "${object}" in calendar "${calendar}" was edited since`, {
      exists: true,
      etag: now,
    });
  const trash = `move the event "${object}" of calendar "${calendar}" to the calendar's trash bin`;
  if (dryRun) return wouldUndo(trash);
  await client.trashEvent(calendar, object);
  // Its entry there, for the owner (the DELETE's answer does not name it).
  const items = await client.calendarTrash().catch(() => []);
  const uid = op.uid;
  const mine = items.filter(
    (i) => i.calendar === calendar && uid !== undefined && i.uids.includes(uid),
  );
  return {
    result: 'undone',
    reason: trash.replace(/^move/, 'moved'),
    calendar_trash: mine.length === 1 ? (mine[0]?.item ?? null) : null,
  };
}

/** What undo uses of the checkout locks (checkouts.ts, and the lock table). */
export interface LockRelease {
  /** The lock's record now (undefined: the broker has none of that number). */
  lock(id: number): CheckoutLockRecord | undefined;
  /** Releases it now (audited `release_lock`); resolves once the attempt ran. */
  release(id: number): Promise<void>;
}

/** A checkout's lock: released, unless it is gone already. */
export async function undoLock(
  locks: LockRelease,
  effect: Extract<EffectRecord, { kind: 'locked' }>,
  dryRun: boolean,
): Promise<Undoing> {
  const record = locks.lock(effect.lock);
  if (record === undefined)
    return notUndoable(`the broker has no record of checkout lock ${effect.lock}`);
  if (record.state === 'released')
    return {
      result: 'already',
      reason: `its lock on "${record.path}" was released already${record.releasedAt === null ? '' : ` (${iso(record.releasedAt)})`}`,
    };
  const release = `release its lock on "${record.path}"`;
  if (dryRun) return wouldUndo(release);
  await locks.release(record.id);
  const after = locks.lock(record.id);
  if (after?.state === 'released')
    return { result: 'undone', reason: `released its lock on "${record.path}"` };
  return {
    result: 'failed',
    code: 'release_pending',
    reason: `Nextcloud has not confirmed the release of the lock on "${record.path}" yet${after?.lastError === null || after?.lastError === undefined ? '' : ` (${after.lastError})`}; the broker keeps trying (see broker status)`,
  };
}
