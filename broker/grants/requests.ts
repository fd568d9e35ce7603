/**
 * Access requests and the owner's decisions on them (docs/contracts.md §3).
 *
 * - A request is decided once. The decision is an atomic
 *   `UPDATE requests … WHERE id = ? AND state = 'pending'` that must change exactly one
 *   row, in one transaction with the grant rows, so two approvers, two connections or a
 *   retried message can never decide twice or grant from a denied request.
 * - A pending request older than the pending timeout cannot be approved, even before
 *   the sweeper marked it expired; a discarded request (broker restarted) neither.
 * - Expiry counts from the broker's clock at approval.
 */
import type Database from 'better-sqlite3';
import type { Clock, GrantRecord, Kind, Mode, RequestRecord } from '../base/domain.js';
import {
  COLLECTION_WORDS,
  DEFAULT_KIND,
  isCollectionKind,
  isKind,
  KIND_NAMES,
  kindGrants,
  modeRefusal,
} from '../base/kinds.js';
import { canonicalPath } from '../wall.js';
import { invalid, isPositiveInt, type GrantDatabase } from './database.js';
import { GrantStoreError, toGrant, toRequest } from './rows.js';

export type DecideRefusal =
  | 'unknown_request'
  | 'already_decided'
  | 'expired'
  | 'bad_items'
  | 'expiry_above_max'
  | 'bad_duration';

export type DecideResult =
  | { ok: true; request: RequestRecord; granted: GrantRecord[] }
  | { ok: false; code: DecideRefusal; message: string };

export type Decision =
  | { kind: 'approve'; items?: number[]; durationMs: number; maxMs: number; by: string }
  | { kind: 'deny'; by: string };

export interface NewRequest {
  instance: string;
  reason: string;
  /** `kind` absent: files. */
  items: { kind?: Kind; path: string; mode: Mode }[];
}

/** A new request, or the ids of the requests already waiting when there are too many. */
export type CreateResult =
  { ok: true; request: RequestRecord } | { ok: false; code: 'too_many_pending'; pending: number[] };

function validateNew(input: NewRequest): void {
  if (typeof input.instance !== 'string' || input.instance === '') {
    throw invalid('instance must be a non-empty string');
  }
  if (typeof input.reason !== 'string') throw invalid('reason must be a string');
  if (!Array.isArray(input.items) || input.items.length === 0) {
    throw invalid('a request needs at least one item');
  }
  for (const item of input.items) {
    // Security: only canonical paths are stored, so the wall later compares exactly
    // the spelling the owner approved.
    const c = canonicalPath(item.path);
    if (!c.ok || c.path !== item.path)
      throw invalid('item paths must be canonical (see wall.canonicalPath)');
    if (item.mode !== 'read' && item.mode !== 'write')
      throw invalid('item mode must be read or write');
    const kind = item.kind ?? DEFAULT_KIND;
    if (!isKind(kind)) throw invalid(`item kind must be one of ${KIND_NAMES.join(', ')}`);
    // Security: a collection is one component, and a kind is granted only its own modes.
    if (isCollectionKind(kind) && item.path.includes('/'))
      throw invalid(`a ${COLLECTION_WORDS} item names one component`);
    if (!kindGrants(kind, item.mode)) throw invalid(modeRefusal(kind, item.mode));
  }
}

function refuse(code: DecideRefusal, message: string): DecideResult {
  return { ok: false, code, message };
}

function decidedElsewhere(id: number): DecideResult {
  return refuse('already_decided', `request ${id} was decided by someone else at the same moment`);
}

export class RequestTable {
  readonly #db: Database.Database;
  readonly #now: Clock;

  readonly #pendingTimeoutMs: number;

  constructor(database: GrantDatabase, pendingTimeoutMs: number) {
    this.#pendingTimeoutMs = pendingTimeoutMs;
    this.#db = database.db;
    this.#now = database.now;
  }

  /** Records a pending request; items are numbered 1… in the order given. */
  createRequest(input: NewRequest): RequestRecord {
    const result = this.createRequestWithin(input, Number.POSITIVE_INFINITY);
    if (!result.ok) throw invalid('unreachable: no limit on pending requests');
    return result.request;
  }

  /**
   * Records a pending request unless `maxPending` requests already wait for a decision
   * (those still pending and not yet past the pending timeout, on every instance).
   * Security: the count and the insert are one IMMEDIATE transaction, so concurrent
   * requests (or a second connection) can never together pass the limit.
   */
  createRequestWithin(input: NewRequest, maxPending: number): CreateResult {
    validateNew(input);
    if (!(maxPending >= 1)) throw invalid('maxPending must be at least 1');
    const now = this.#now();
    const outcome = this.#db
      .transaction((): { ok: true; id: number } | { ok: false; waiting: number[] } => {
        const waiting = this.#db
          .prepare(`SELECT id FROM requests WHERE state = 'pending' AND created_at > ? ORDER BY id`)
          .all(now - this.#pendingTimeoutMs)
          .map((row) => (row as { id: number }).id);
        if (waiting.length >= maxPending) return { ok: false, waiting };
        const info = this.#db
          .prepare(
            `INSERT INTO requests (instance, reason, state, created_at) VALUES (?, ?, 'pending', ?)`,
          )
          .run(input.instance, input.reason, now);
        const requestId = Number(info.lastInsertRowid);
        const insertItem = this.#db.prepare(
          'INSERT INTO items (request_id, n, kind, path, mode) VALUES (?, ?, ?, ?, ?)',
        );
        input.items.forEach((item, i) =>
          insertItem.run(requestId, i + 1, item.kind ?? DEFAULT_KIND, item.path, item.mode),
        );
        return { ok: true, id: requestId };
      })
      .immediate();
    if (!outcome.ok) return { ok: false, code: 'too_many_pending', pending: outcome.waiting };
    return { ok: true, request: this.#mustGetRequest(outcome.id) };
  }

  getRequest(id: number): RequestRecord | undefined {
    if (!isPositiveInt(id)) return undefined;
    const row = this.#db.prepare('SELECT * FROM requests WHERE id = ?').get(id);
    if (row === undefined) return undefined;
    const items = this.#db.prepare('SELECT * FROM items WHERE request_id = ? ORDER BY n').all(id);
    const grants = this.#db
      .prepare('SELECT * FROM grants WHERE request_id = ? ORDER BY item_no')
      .all(id)
      .map(toGrant);
    return toRequest(row, items, grants);
  }

  /** Requests still marked pending, oldest first (some may be past the timeout). */
  pendingRequests(): RequestRecord[] {
    return this.#requestsByIds(
      this.#db.prepare(`SELECT id FROM requests WHERE state = 'pending' ORDER BY id`).all(),
    );
  }

  /**
   * Approves all or some items of a pending request, or denies it. Exactly one decision
   * per request ever succeeds; a refusal changes nothing (except marking a request that
   * is past its timeout as expired).
   */
  decide(id: number, d: Decision): DecideResult {
    if (typeof d.by !== 'string' || d.by === '') throw invalid('decide needs who decided (by)');
    return this.#db
      .transaction((): DecideResult => {
        const before = this.getRequest(id);
        if (before === undefined) return refuse('unknown_request', `there is no request ${id}`);
        if (before.state === 'expired' || before.state === 'discarded') {
          return refuse(
            'expired',
            before.state === 'expired'
              ? `request ${id} expired unanswered; the agent must ask again`
              : `request ${id} was discarded when the broker restarted; the agent must ask again`,
          );
        }
        if (before.state !== 'pending') {
          return refuse(
            'already_decided',
            `request ${id} was already ${before.state.replace('_', ' ')}`,
          );
        }
        const now = this.#now();
        // Security: silence grants nothing; a stale request cannot be approved late,
        // whether or not the sweeper has marked it yet.
        if (now - before.createdAt >= this.#pendingTimeoutMs) {
          this.#db
            .prepare(
              `UPDATE requests SET state = 'expired', decided_at = ? WHERE id = ? AND state = 'pending'`,
            )
            .run(now, id);
          return refuse('expired', `request ${id} expired unanswered; the agent must ask again`);
        }

        if (d.kind === 'deny') {
          if (!this.#claim(id, 'denied', now, d.by)) return decidedElsewhere(id);
          return { ok: true, request: this.#mustGetRequest(id), granted: [] };
        }

        if (!isPositiveInt(d.durationMs) || !isPositiveInt(d.maxMs)) {
          return refuse(
            'bad_duration',
            'the grant duration must be a positive whole number of milliseconds',
          );
        }
        // Security: the owner's configured ceiling holds whatever the command said.
        if (d.durationMs > d.maxMs) {
          return refuse('expiry_above_max', `the grant duration is above the maximum allowed`);
        }
        const numbers = before.items.map((it) => it.n);
        let chosen: number[];
        if (d.items === undefined) chosen = numbers;
        else {
          chosen = [...new Set(d.items)].sort((a, b) => a - b);
          const unknown = chosen.filter((n) => !Number.isInteger(n) || !numbers.includes(n));
          if (chosen.length === 0 || unknown.length > 0) {
            return refuse(
              'bad_items',
              chosen.length === 0
                ? 'no items were named'
                : `request ${id} has items 1-${numbers.length}; there is no item ${unknown.join(', ')}`,
            );
          }
        }
        const state = chosen.length === numbers.length ? 'approved' : 'partially_approved';
        if (!this.#claim(id, state, now, d.by)) return decidedElsewhere(id);

        const expiresAt = now + d.durationMs;
        const insert = this.#db.prepare(
          `INSERT INTO grants (request_id, item_no, instance, kind, path, mode, state, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
        );
        for (const n of chosen) {
          const item = before.items.find((it) => it.n === n);
          if (item === undefined) throw new GrantStoreError('corrupt', `item ${n} vanished`);
          insert.run(id, n, before.instance, item.kind, item.path, item.mode, now, expiresAt);
        }
        const request = this.#mustGetRequest(id);
        const granted = request.items.flatMap((it) => (it.grant === null ? [] : [it.grant]));
        return { ok: true, request, granted };
      })
      .immediate();
  }

  /**
   * Security: the decide-once guard. Whatever was read before, only the connection
   * whose UPDATE changes the still-pending row decides; it runs before any grant row
   * is written, so a lost race writes nothing.
   */
  #claim(
    id: number,
    state: 'approved' | 'partially_approved' | 'denied',
    now: number,
    by: string,
  ): boolean {
    const info = this.#db
      .prepare(
        `UPDATE requests SET state = ?, decided_at = ?, decided_by = ? WHERE id = ? AND state = 'pending'`,
      )
      .run(state, now, by, id);
    return info.changes === 1;
  }

  /** Marks pending requests at least `timeoutMs` old as expired and returns them. */
  expirePending(timeoutMs: number): RequestRecord[] {
    if (!isPositiveInt(timeoutMs)) throw invalid('timeoutMs must be a positive whole number');
    const now = this.#now();
    return this.#endPending(
      `UPDATE requests SET state = 'expired', decided_at = ?
       WHERE state = 'pending' AND created_at <= ? RETURNING id`,
      now,
      now - timeoutMs,
    );
  }

  /** On start: every pending request is discarded (silence grants nothing). */
  discardAllPending(): RequestRecord[] {
    return this.#endPending(
      `UPDATE requests SET state = 'discarded', decided_at = ? WHERE state = 'pending' RETURNING id`,
      this.#now(),
    );
  }

  #endPending(sql: string, ...params: number[]): RequestRecord[] {
    return this.#db
      .transaction(() => this.#requestsByIds(this.#db.prepare(sql).all(...params)))
      .immediate()
      .sort((a, b) => a.id - b.id);
  }

  #requestsByIds(rows: unknown[]): RequestRecord[] {
    return rows.map((row) => {
      const id = (row as { id?: unknown }).id;
      if (!isPositiveInt(id)) throw new GrantStoreError('corrupt', 'a request id is not a number');
      return this.#mustGetRequest(id);
    });
  }

  #mustGetRequest(id: number): RequestRecord {
    const r = this.getRequest(id);
    if (r === undefined) throw new GrantStoreError('corrupt', `request ${id} vanished`);
    return r;
  }
}
