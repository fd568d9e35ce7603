/**
 * The grant store: access requests, the owner's decisions on them, and the grants
 * those decisions made (DESIGN §4). SQLite through better-sqlite3, WAL journal,
 * `synchronous=FULL` (a decision acknowledged to the owner survives a power cut).
 *
 * What it allows and refuses:
 * - A request is decided once. The decision is an atomic
 *   `UPDATE requests … WHERE id = ? AND state = 'pending'` that must change exactly one
 *   row, in one transaction with the grant rows, so two approvers, two connections or a
 *   retried message can never decide twice or grant from a denied request.
 * - A pending request older than the pending timeout cannot be approved, even before
 *   the sweeper marked it expired; a discarded request (broker restarted) neither.
 * - A grant is active only while `state = 'active'` and `now < expiresAt`; once revoked
 *   or marked expired it never comes back (the schema's triggers refuse it too), even
 *   if the clock goes backwards. Expiry counts from the broker's clock at approval.
 */
import Database from 'better-sqlite3';
import type { Clock, GrantRecord, Mode, RequestRecord } from '../base/domain.js';
import { canonicalPath } from '../wall.js';
import { migrate } from './migrations.js';
import {
  GrantStoreError,
  toApprovalReaction,
  toGrant,
  toRequest,
  type ApprovalReaction,
} from './rows.js';

export { GrantStoreError, type ApprovalReaction } from './rows.js';

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

/** The approver's 👍 (a chat event in `roomId`) that approved `requestId`. */
export interface ApprovalReactionLink {
  eventId: string;
  requestId: number;
  roomId: string;
  approver: string;
}

/** Who withdrew a reaction, and where: both must match the recorded link. */
export interface ReactionWithdrawal {
  roomId: string;
  approver: string;
}

/** Matrix ids are at most 255 bytes; anything longer is not one. */
const MAX_CHAT_ID_LENGTH = 255;

const isChatId = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= MAX_CHAT_ID_LENGTH;

export interface NewRequest {
  instance: string;
  reason: string;
  items: { path: string; mode: Mode }[];
}

export interface GrantStoreDeps {
  now: Clock;
  /**
   * A pending request at least this old (ms) is expired: `decide` refuses it and marks
   * it. Pass `lifecycle.pending_timeout` from the config. Default: 12 h (DESIGN §4).
   */
  pendingTimeoutMs?: number;
  /** How long to wait (ms) for another connection's write to finish. Default 5000. */
  busyTimeoutMs?: number;
}

const DEFAULT_PENDING_TIMEOUT_MS = 12 * 3_600_000;

const isPositiveInt = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

function refuse(code: DecideRefusal, message: string): DecideResult {
  return { ok: false, code, message };
}

function decidedElsewhere(id: number): DecideResult {
  return refuse('already_decided', `request ${id} was decided by someone else at the same moment`);
}

function invalid(message: string): GrantStoreError {
  return new GrantStoreError('invalid_input', message);
}

/** 16 bytes as lowercase hex: what migration 3 writes. */
const STORE_ID = /^[0-9a-f]{32}$/;

function readStoreId(db: Database.Database): string {
  const row = db.prepare('SELECT store_id FROM store_meta WHERE only_row = 1').get() as
    { store_id?: unknown } | undefined;
  const id = row?.store_id;
  if (typeof id !== 'string' || !STORE_ID.test(id)) {
    throw new GrantStoreError('corrupt', 'the grant database has no valid store id');
  }
  return id;
}

export class GrantStore {
  /**
   * This database's random identity (32 hex digits), made once when it was created or
   * upgraded. Request numbers are unique only within one database; chat messages carry
   * this id too, so a message about another database's request N is never taken for
   * this one's.
   */
  readonly storeId: string;
  private readonly db: Database.Database;
  private readonly now: Clock;
  private readonly pendingTimeoutMs: number;
  private snapshot: { key: string; grants: readonly GrantRecord[] } | undefined;

  private constructor(db: Database.Database, deps: GrantStoreDeps, storeId: string) {
    this.db = db;
    this.storeId = storeId;
    this.now = deps.now;
    this.pendingTimeoutMs = deps.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS;
  }

  /** Opens (creating and migrating if needed) the database at `file`; `:memory:` for tests. */
  static open(file: string, deps: GrantStoreDeps): GrantStore {
    if (deps.pendingTimeoutMs !== undefined && !isPositiveInt(deps.pendingTimeoutMs)) {
      throw invalid('pendingTimeoutMs must be a positive whole number of milliseconds');
    }
    const db = new Database(file, { timeout: deps.busyTimeoutMs ?? 5000 });
    let storeId: string;
    try {
      const journal = db.pragma('journal_mode = WAL', { simple: true });
      // Security: durability of decisions; a crash must not lose a revoke the owner saw.
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      if (file !== ':memory:' && journal !== 'wal') {
        throw new GrantStoreError(
          'schema',
          `cannot use WAL journalling for ${file} (got ${String(journal)})`,
        );
      }
      if (db.pragma('foreign_keys', { simple: true }) !== 1) {
        throw new GrantStoreError('schema', 'SQLite refused to enforce foreign keys');
      }
      try {
        migrate(db);
      } catch (e) {
        if (e instanceof GrantStoreError) throw e;
        throw new GrantStoreError('schema', e instanceof Error ? e.message : String(e), {
          cause: e,
        });
      }
      storeId = readStoreId(db);
    } catch (e) {
      db.close();
      throw e;
    }
    return new GrantStore(db, deps, storeId);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // ---- requests --------------------------------------------------------------------

  /** Records a pending request; items are numbered 1… in the order given. */
  createRequest(input: NewRequest): RequestRecord {
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
    }
    const now = this.now();
    const id = this.db
      .transaction(() => {
        const info = this.db
          .prepare(
            `INSERT INTO requests (instance, reason, state, created_at) VALUES (?, ?, 'pending', ?)`,
          )
          .run(input.instance, input.reason, now);
        const requestId = Number(info.lastInsertRowid);
        const insertItem = this.db.prepare(
          'INSERT INTO items (request_id, n, path, mode) VALUES (?, ?, ?, ?)',
        );
        input.items.forEach((item, i) => insertItem.run(requestId, i + 1, item.path, item.mode));
        return requestId;
      })
      .immediate();
    return this.mustGetRequest(id);
  }

  getRequest(id: number): RequestRecord | undefined {
    if (!isPositiveInt(id)) return undefined;
    const row = this.db.prepare('SELECT * FROM requests WHERE id = ?').get(id);
    if (row === undefined) return undefined;
    const items = this.db.prepare('SELECT * FROM items WHERE request_id = ? ORDER BY n').all(id);
    const grants = this.db
      .prepare('SELECT * FROM grants WHERE request_id = ? ORDER BY item_no')
      .all(id)
      .map(toGrant);
    return toRequest(row, items, grants);
  }

  /** Requests still marked pending, oldest first (some may be past the timeout). */
  pendingRequests(): RequestRecord[] {
    return this.requestsByIds(
      this.db.prepare(`SELECT id FROM requests WHERE state = 'pending' ORDER BY id`).all(),
    );
  }

  /**
   * Approves all or some items of a pending request, or denies it. Exactly one decision
   * per request ever succeeds; a refusal changes nothing (except marking a request that
   * is past its timeout as expired).
   */
  decide(id: number, d: Decision): DecideResult {
    if (typeof d.by !== 'string' || d.by === '') throw invalid('decide needs who decided (by)');
    return this.db
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
        const now = this.now();
        // Security: silence grants nothing; a stale request cannot be approved late,
        // whether or not the sweeper has marked it yet.
        if (now - before.createdAt >= this.pendingTimeoutMs) {
          this.db
            .prepare(
              `UPDATE requests SET state = 'expired', decided_at = ? WHERE id = ? AND state = 'pending'`,
            )
            .run(now, id);
          return refuse('expired', `request ${id} expired unanswered; the agent must ask again`);
        }

        if (d.kind === 'deny') {
          if (!this.claim(id, 'denied', now, d.by)) return decidedElsewhere(id);
          return { ok: true, request: this.mustGetRequest(id), granted: [] };
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
        if (!this.claim(id, state, now, d.by)) return decidedElsewhere(id);

        const expiresAt = now + d.durationMs;
        const insert = this.db.prepare(
          `INSERT INTO grants (request_id, item_no, instance, path, mode, state, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, 'active', ?, ?)`,
        );
        for (const n of chosen) {
          const item = before.items.find((it) => it.n === n);
          if (item === undefined) throw new GrantStoreError('corrupt', `item ${n} vanished`);
          insert.run(id, n, before.instance, item.path, item.mode, now, expiresAt);
        }
        const request = this.mustGetRequest(id);
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
  private claim(
    id: number,
    state: 'approved' | 'partially_approved' | 'denied',
    now: number,
    by: string,
  ): boolean {
    const info = this.db
      .prepare(
        `UPDATE requests SET state = ?, decided_at = ?, decided_by = ? WHERE id = ? AND state = 'pending'`,
      )
      .run(state, now, by, id);
    return info.changes === 1;
  }

  /** Marks pending requests at least `timeoutMs` old as expired and returns them. */
  expirePending(timeoutMs: number): RequestRecord[] {
    if (!isPositiveInt(timeoutMs)) throw invalid('timeoutMs must be a positive whole number');
    const now = this.now();
    return this.endPending(
      `UPDATE requests SET state = 'expired', decided_at = ?
       WHERE state = 'pending' AND created_at <= ? RETURNING id`,
      now,
      now - timeoutMs,
    );
  }

  /** On start: every pending request is discarded (silence grants nothing). */
  discardAllPending(): RequestRecord[] {
    return this.endPending(
      `UPDATE requests SET state = 'discarded', decided_at = ? WHERE state = 'pending' RETURNING id`,
      this.now(),
    );
  }

  private endPending(sql: string, ...params: number[]): RequestRecord[] {
    return this.db
      .transaction(() => this.requestsByIds(this.db.prepare(sql).all(...params)))
      .immediate()
      .sort((a, b) => a.id - b.id);
  }

  // ---- grants ----------------------------------------------------------------------

  grant(id: number): GrantRecord | undefined {
    if (!isPositiveInt(id)) return undefined;
    const row = this.db.prepare('SELECT * FROM grants WHERE id = ?').get(id);
    return row === undefined ? undefined : toGrant(row);
  }

  /**
   * Every grant in state `active`, expired or not, as one frozen snapshot for the wall
   * (which checks `now < expiresAt` itself and indexes a frozen list once). The snapshot
   * is rebuilt whenever this connection or any other has written to the database since.
   * Security: never stale — SQLite's data_version changes on another connection's commit
   * and total_changes() on this connection's own writes, and both are read every call.
   */
  grantsInForce(): readonly GrantRecord[] {
    const version = this.db
      .prepare('SELECT (SELECT data_version FROM pragma_data_version()) AS d, total_changes() AS t')
      .get() as { d: number; t: number };
    const key = `${version.d}:${version.t}`;
    if (this.snapshot === undefined || this.snapshot.key !== key) {
      const grants = this.db
        .prepare(`SELECT * FROM grants WHERE state = 'active' ORDER BY id`)
        .all()
        .map((row) => Object.freeze(toGrant(row)));
      this.snapshot = { key, grants: Object.freeze(grants) };
    }
    return this.snapshot.grants;
  }

  /** Grants in force now: state active and `now < expiresAt` (the expiry instant is out). */
  activeGrants(): GrantRecord[] {
    return this.db
      .prepare(`SELECT * FROM grants WHERE state = 'active' AND expires_at > ? ORDER BY id`)
      .all(this.now())
      .map(toGrant);
  }

  /** Marks active grants at or past their expiry as expired; returns them (to announce, unlock). */
  expireGrants(): GrantRecord[] {
    const now = this.now();
    return this.endGrants(`state = 'active' AND expires_at <= ?`, 'expired', now, [now]);
  }

  revokeRequest(id: number): GrantRecord[] {
    return this.revoke('request_id = ?', [id]);
  }

  revokeInstance(name: string): GrantRecord[] {
    return this.revoke('instance = ?', [name]);
  }

  revokeAll(): GrantRecord[] {
    return this.revoke('1 = 1', []);
  }

  revokeGrants(ids: number[]): GrantRecord[] {
    const valid = [...new Set(ids)].filter(isPositiveInt);
    if (valid.length === 0) return [];
    return this.revoke(`id IN (${valid.map(() => '?').join(', ')})`, valid);
  }

  /** Revokes grants still in force that match; returns exactly those that changed. */
  private revoke(where: string, params: (string | number)[]): GrantRecord[] {
    const now = this.now();
    return this.endGrants(`state = 'active' AND expires_at > ? AND (${where})`, 'revoked', now, [
      now,
      ...params,
    ]);
  }

  private endGrants(
    where: string,
    state: 'expired' | 'revoked',
    now: number,
    params: (string | number)[],
  ): GrantRecord[] {
    return this.db
      .transaction(() =>
        this.db
          .prepare(`UPDATE grants SET state = ?, ended_at = ? WHERE ${where} RETURNING *`)
          .all(state, now, ...params)
          .map(toGrant),
      )
      .immediate()
      .sort((a, b) => a.id - b.id);
  }

  // ---- approval reactions ----------------------------------------------------------

  /**
   * Remembers that the approver's reaction `eventId` approved `requestId`, so that
   * withdrawing it can revoke what it granted, across restarts (DESIGN §6). Only for a
   * request that was approved. False when the event was already recorded (unchanged).
   */
  recordApprovalReaction(link: ApprovalReactionLink): boolean {
    if (!isChatId(link.eventId) || !isChatId(link.roomId) || !isChatId(link.approver)) {
      throw invalid('an approval reaction needs an event id, a room id and an approver');
    }
    const state = this.getRequest(link.requestId)?.state;
    if (state !== 'approved' && state !== 'partially_approved') {
      throw invalid(`request ${String(link.requestId)} was not approved; no reaction approved it`);
    }
    const info = this.db
      .prepare(
        `INSERT INTO approval_reactions (event_id, request_id, room_id, approver, created_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
      )
      .run(link.eventId, link.requestId, link.roomId, link.approver, this.now());
    return info.changes === 1;
  }

  /** The recorded reaction `eventId`, undone or not. */
  approvalReaction(eventId: string): ApprovalReaction | undefined {
    if (!isChatId(eventId)) return undefined;
    const row = this.db.prepare('SELECT * FROM approval_reactions WHERE event_id = ?').get(eventId);
    return row === undefined ? undefined : toApprovalReaction(row);
  }

  /** The request whose approval the reaction `eventId` made and has not yet been undone. */
  approvalReactionRequest(eventId: string): number | undefined {
    const r = this.approvalReaction(eventId);
    return r === undefined || r.undoneAt !== null ? undefined : r.requestId;
  }

  /**
   * The reaction `eventId` was withdrawn: marks it undone and returns the request it had
   * approved, or undefined (not an approving reaction, already undone, or withdrawn
   * elsewhere or by someone else). The caller then revokes that request's grants.
   */
  takeApprovalReaction(eventId: string, by: ReactionWithdrawal): number | undefined {
    if (!isChatId(eventId) || !isChatId(by.roomId) || !isChatId(by.approver)) return undefined;
    // Security: only the approver who reacted, in the room where they did, undoes their
    // approval, and only once (a replayed redaction finds the link already undone).
    const row = this.db
      .prepare(
        `UPDATE approval_reactions SET undone_at = ?
         WHERE event_id = ? AND room_id = ? AND approver = ? AND undone_at IS NULL
         RETURNING *`,
      )
      .get(this.now(), eventId, by.roomId, by.approver);
    return row === undefined ? undefined : toApprovalReaction(row).requestId;
  }

  // ---- helpers ---------------------------------------------------------------------

  private requestsByIds(rows: unknown[]): RequestRecord[] {
    return rows.map((row) => {
      const id = (row as { id?: unknown }).id;
      if (!isPositiveInt(id)) throw new GrantStoreError('corrupt', 'a request id is not a number');
      return this.mustGetRequest(id);
    });
  }

  private mustGetRequest(id: number): RequestRecord {
    const r = this.getRequest(id);
    if (r === undefined) throw new GrantStoreError('corrupt', `request ${id} vanished`);
    return r;
  }
}
