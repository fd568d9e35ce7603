/**
 * The checkout locks the broker holds on Nextcloud (table checkout_locks, migration 4),
 * beside the grants that allowed them, so that a restart forgets none: a lock whose
 * grant ended while the broker was down is released on start, and a release that failed
 * is tried again until Nextcloud confirms it (operations/lock-release.ts).
 *
 * Lookups by token go through the token's sha256, never a comparison of the secret.
 */
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { z } from 'zod';
import type {
  CheckoutLockEnd,
  CheckoutLockRecord,
  Clock,
  NewCheckoutLock,
} from '../base/domain.js';
import { invalid, isPositiveInt, type GrantDatabase } from './database.js';
import { IdSchema, parseRow, TimeSchema } from './rows.js';

const LockEndSchema = z.enum([
  'checkin',
  'abandon',
  'revoked',
  'expired',
  'timed_out',
  'not_taken',
  'checkout_failed',
]);

const CheckoutLockRowSchema = z.strictObject({
  id: IdSchema,
  instance: z.string().min(1),
  path: z.string().min(1),
  token: z.string().min(1),
  token_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  locked_at: TimeSchema,
  lock_expires_at: TimeSchema,
  state: z.enum(['held', 'releasing', 'released']),
  end_reason: LockEndSchema.nullable(),
  attempts: z.number().int().nonnegative(),
  next_attempt_at: TimeSchema.nullable(),
  last_error: z.string().nullable(),
  released_at: TimeSchema.nullable(),
  // Joined: comma-separated ids.
  grant_ids: z.string().nullable(),
  request_ids: z.string().nullable(),
});

const ids = (list: string | null): number[] =>
  list === null || list === ''
    ? []
    : list
        .split(',')
        .map(Number)
        .sort((a, b) => a - b);

function toLock(row: unknown): CheckoutLockRecord {
  const r = parseRow(CheckoutLockRowSchema, row, 'checkout_locks');
  return {
    id: r.id,
    instance: r.instance,
    path: r.path,
    token: r.token,
    grantIds: ids(r.grant_ids),
    requestIds: [...new Set(ids(r.request_ids))],
    lockedAt: r.locked_at,
    lockExpiresAt: r.lock_expires_at,
    state: r.state,
    end: r.end_reason,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    releasedAt: r.released_at,
  };
}

export const tokenKey = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex');

const SELECT = `
  SELECT l.*,
    (SELECT group_concat(lg.grant_id) FROM checkout_lock_grants lg WHERE lg.lock_id = l.id)
      AS grant_ids,
    (SELECT group_concat(g.request_id) FROM checkout_lock_grants lg
       JOIN grants g ON g.id = lg.grant_id WHERE lg.lock_id = l.id) AS request_ids
  FROM checkout_locks l`;

export class CheckoutLockTable {
  readonly #db: Database.Database;
  readonly #now: Clock;

  constructor(database: GrantDatabase) {
    this.#db = database.db;
    this.#now = database.now;
  }

  /** Records a lock the moment Nextcloud answered the LOCK, with the grants behind it. */
  add(lock: NewCheckoutLock): CheckoutLockRecord {
    const grants = [...new Set(lock.grantIds)];
    if (grants.length === 0 || !grants.every(isPositiveInt))
      throw invalid('a checkout lock needs the ids of the grants that allowed it');
    return this.#db
      .transaction(() => {
        const row = this.#db
          .prepare(
            `INSERT INTO checkout_locks
               (instance, path, token, token_sha256, locked_at, lock_expires_at, state)
             VALUES (?, ?, ?, ?, ?, ?, 'held') RETURNING id`,
          )
          .get(
            lock.instance,
            lock.path,
            lock.token,
            tokenKey(lock.token),
            lock.lockedAt,
            lock.lockExpiresAt,
          ) as { id: number };
        const link = this.#db.prepare(
          'INSERT INTO checkout_lock_grants (lock_id, grant_id) VALUES (?, ?)',
        );
        for (const grant of grants) link.run(row.id, grant);
        return this.#byId(row.id) as CheckoutLockRecord;
      })
      .immediate();
  }

  /** The lock recorded for this token, whatever its state. */
  byToken(token: string): CheckoutLockRecord | undefined {
    const row = this.#db.prepare(`${SELECT} WHERE l.token_sha256 = ?`).get(tokenKey(token));
    return row === undefined ? undefined : toLock(row);
  }

  /** Locks not yet confirmed released (held or releasing), oldest first. */
  open(): CheckoutLockRecord[] {
    return this.#db
      .prepare(`${SELECT} WHERE l.state <> 'released' ORDER BY l.id`)
      .all()
      .map(toLock);
  }

  /**
   * Marks for release every held lock that must go now: one relying on a grant that is
   * no longer in force (`revoked` if any of its grants was revoked, else `expired`), or
   * whose LOCK timed out on Nextcloud (`timed_out`). Returns the locks whose release is
   * due (releasing, next attempt at or before now), oldest first.
   */
  due(): CheckoutLockRecord[] {
    const now = this.#now();
    return this.#db
      .transaction(() => {
        this.#db
          .prepare(
            `UPDATE checkout_locks SET state = 'releasing', next_attempt_at = ?,
               end_reason = CASE
                 WHEN EXISTS (SELECT 1 FROM checkout_lock_grants lg JOIN grants g ON g.id = lg.grant_id
                              WHERE lg.lock_id = checkout_locks.id AND g.state = 'revoked') THEN 'revoked'
                 WHEN EXISTS (SELECT 1 FROM checkout_lock_grants lg JOIN grants g ON g.id = lg.grant_id
                              WHERE lg.lock_id = checkout_locks.id
                                AND (g.state <> 'active' OR g.expires_at <= ?)) THEN 'expired'
                 ELSE 'timed_out' END
             WHERE state = 'held' AND (lock_expires_at <= ? OR EXISTS (
               SELECT 1 FROM checkout_lock_grants lg JOIN grants g ON g.id = lg.grant_id
               WHERE lg.lock_id = checkout_locks.id AND (g.state <> 'active' OR g.expires_at <= ?)))`,
          )
          .run(now, now, now, now);
        return this.#db
          .prepare(`${SELECT} WHERE l.state = 'releasing' AND l.next_attempt_at <= ? ORDER BY l.id`)
          .all(now)
          .map(toLock);
      })
      .immediate();
  }

  /** Marks the held locks relying on any of these grants for release now; returns them. */
  releaseForGrants(grantIds: readonly number[], end: 'revoked' | 'expired'): CheckoutLockRecord[] {
    const valid = [...new Set(grantIds)].filter(isPositiveInt);
    if (valid.length === 0) return [];
    const marks = valid.map(() => '?').join(', ');
    return this.#db
      .transaction(() => {
        const changed = this.#db
          .prepare(
            `UPDATE checkout_locks SET state = 'releasing', end_reason = ?, next_attempt_at = ?
             WHERE state = 'held' AND id IN
               (SELECT lock_id FROM checkout_lock_grants WHERE grant_id IN (${marks}))
             RETURNING id`,
          )
          .all(end, this.#now(), ...valid) as { id: number }[];
        return changed.map((r) => this.#byId(r.id) as CheckoutLockRecord);
      })
      .immediate();
  }

  /**
   * A held lock must go (its checkout failed, or the checkin's own release did: then
   * `error` says why, and counts as an attempt); its release is due now.
   */
  markReleasing(lockId: number, end: CheckoutLockEnd, error?: string): void {
    this.#db
      .prepare(
        `UPDATE checkout_locks SET state = 'releasing', end_reason = ?, attempts = attempts + ?,
           next_attempt_at = ?, last_error = ? WHERE id = ? AND state = 'held'`,
      )
      .run(end, error === undefined ? 0 : 1, this.#now(), error ?? null, lockId);
  }

  /** A release attempt failed: the next one is due at `nextAttemptAt`. */
  attemptFailed(lockId: number, nextAttemptAt: number, error: string): void {
    this.#db
      .prepare(
        `UPDATE checkout_locks SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
         WHERE id = ? AND state = 'releasing'`,
      )
      .run(nextAttemptAt, error, lockId);
  }

  /**
   * Nextcloud confirmed the lock is gone (or never held it: `not_taken`). `end` is kept
   * when the lock was already releasing for another reason.
   */
  released(lockId: number, end: CheckoutLockEnd, attempted: boolean): void {
    this.#db
      .prepare(
        `UPDATE checkout_locks SET state = 'released', released_at = ?, next_attempt_at = NULL,
           end_reason = COALESCE(end_reason, ?), attempts = attempts + ?
         WHERE id = ? AND state <> 'released'`,
      )
      .run(this.#now(), end, attempted ? 1 : 0, lockId);
  }

  /** The lock recorded under this number, whatever its state (undo reads it). */
  byId(lockId: number): CheckoutLockRecord | undefined {
    return this.#byId(lockId);
  }

  #byId(lockId: number): CheckoutLockRecord | undefined {
    const row = this.#db.prepare(`${SELECT} WHERE l.id = ?`).get(lockId);
    return row === undefined ? undefined : toLock(row);
  }
}
