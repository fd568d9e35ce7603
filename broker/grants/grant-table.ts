/**
 * The grants the owner's decisions made. A grant is in force only while `state =
 * 'active'` and `now < expiresAt`; once revoked or marked expired it never comes back
 * (the schema's triggers refuse it too), even if the clock goes backwards.
 */
import type Database from 'better-sqlite3';
import type { Clock, EndedGrantView, GrantRecord } from '../base/domain.js';
import { isPositiveInt, type GrantDatabase } from './database.js';
import { toGrant } from './rows.js';

/** A grant that was revoked or marked expired. */
export type EndedGrantRecord = GrantRecord & EndedGrantView;

/** The grants as the wall reads them, frozen: the unended ones and the ended ones. */
export interface GrantSnapshot {
  readonly unended: readonly GrantRecord[];
  readonly ended: readonly EndedGrantRecord[];
}

export class GrantTable {
  readonly #db: Database.Database;
  readonly #now: Clock;
  #snapshot: { key: string; grants: GrantSnapshot } | undefined;
  /**
   * The version check every snapshot makes, prepared once: the wall asks for the
   * snapshot several times per operation, and preparing the statement each time cost
   * more than running it (about a tenth of a millisecond per call).
   */
  readonly #version: Database.Statement<[], { d: number; t: number }>;

  constructor(database: GrantDatabase) {
    this.#db = database.db;
    this.#now = database.now;
    this.#version = this.#db.prepare(
      'SELECT (SELECT data_version FROM pragma_data_version()) AS d, total_changes() AS t',
    );
  }

  grant(id: number): GrantRecord | undefined {
    if (!isPositiveInt(id)) return undefined;
    const row = this.#db.prepare('SELECT * FROM grants WHERE id = ?').get(id);
    return row === undefined ? undefined : toGrant(row);
  }

  /**
   * Every grant not yet ended (state `active`: neither revoked nor marked expired),
   * including those already past their expiry, as one frozen snapshot for the wall
   * (which checks `now < expiresAt` itself and indexes a frozen list once). The snapshot
   * is rebuilt whenever this connection or any other has written to the database since.
   * Security: never stale — SQLite's data_version changes on another connection's commit
   * and total_changes() on this connection's own writes, and both are read every call.
   */
  unendedGrants(): readonly GrantRecord[] {
    return this.grantSnapshot().unended;
  }

  /**
   * The unended grants (as `unendedGrants`) and every grant that ended (revoked or
   * marked expired), both frozen, read under one version check: the wall allows only on
   * the first and names why nothing allows from the second.
   */
  grantSnapshot(): GrantSnapshot {
    const version = this.#version.get() as { d: number; t: number };
    const key = `${version.d}:${version.t}`;
    if (this.#snapshot === undefined || this.#snapshot.key !== key) {
      const unended: GrantRecord[] = [];
      const ended: EndedGrantRecord[] = [];
      for (const row of this.#db.prepare('SELECT * FROM grants ORDER BY id').all()) {
        const grant = Object.freeze(toGrant(row));
        if (grant.state === 'active') unended.push(grant);
        else if (grant.endedAt !== null) ended.push(grant as EndedGrantRecord);
      }
      this.#snapshot = {
        key,
        grants: { unended: Object.freeze(unended), ended: Object.freeze(ended) },
      };
    }
    return this.#snapshot.grants;
  }

  /** Grants in force now: state active and `now < expiresAt` (the expiry instant is out). */
  activeGrants(): GrantRecord[] {
    return this.#db
      .prepare(`SELECT * FROM grants WHERE state = 'active' AND expires_at > ? ORDER BY id`)
      .all(this.#now())
      .map(toGrant);
  }

  /** Marks active grants at or past their expiry as expired; returns them (to announce, unlock). */
  expireGrants(): GrantRecord[] {
    const now = this.#now();
    return this.#endGrants(`state = 'active' AND expires_at <= ?`, 'expired', now, [now]);
  }

  revokeRequest(id: number): GrantRecord[] {
    return this.#revoke('request_id = ?', [id]);
  }

  revokeInstance(name: string): GrantRecord[] {
    return this.#revoke('instance = ?', [name]);
  }

  revokeAll(): GrantRecord[] {
    return this.#revoke('1 = 1', []);
  }

  revokeGrants(ids: number[]): GrantRecord[] {
    const valid = [...new Set(ids)].filter(isPositiveInt);
    if (valid.length === 0) return [];
    return this.#revoke(`id IN (${valid.map(() => '?').join(', ')})`, valid);
  }

  /** Revokes grants still in force that match; returns exactly those that changed. */
  #revoke(where: string, params: (string | number)[]): GrantRecord[] {
    const now = this.#now();
    return this.#endGrants(`state = 'active' AND expires_at > ? AND (${where})`, 'revoked', now, [
      now,
      ...params,
    ]);
  }

  #endGrants(
    where: string,
    state: 'expired' | 'revoked',
    now: number,
    params: (string | number)[],
  ): GrantRecord[] {
    return this.#db
      .transaction(() =>
        this.#db
          .prepare(`UPDATE grants SET state = ?, ended_at = ? WHERE ${where} RETURNING *`)
          .all(state, now, ...params)
          .map(toGrant),
      )
      .immediate()
      .sort((a, b) => a.id - b.id);
  }
}
