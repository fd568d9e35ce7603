/**
 * The nonce of each request's poll. A vote names its answer by id, and the answer ids
 * of request N's poll are `approve-N-<nonce>` and `deny-N-<nonce>`, the nonce random
 * (128 bits) and carried only inside the encrypted poll. So a vote counts for the
 * request its own encrypted answer names, with the nonce that request's poll carried,
 * and never for whatever an event id or a relation (both the homeserver's to write)
 * points at (docs/matrix-behaviour.md).
 *
 * Kept in the grant database, in the table this module owns (approval_polls, created
 * here, own-tables.ts), so a vote after a restart is still checked; in memory for a store without a
 * database. The event id the homeserver answered the poll's send with is kept too, only
 * to notice a vote whose relation names another request's poll.
 */
import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { Clock } from '../../base/domain.js';
import type { GrantDatabase } from '../../grants/index.js';
import { ownTables } from './own-tables.js';

const NONCE = /^[0-9a-f]{32}$/;

export interface PollNonceStore {
  /** Keeps request `requestId`'s nonce (before its poll is sent). */
  create(requestId: number, nonce: string): void;
  /**
   * The homeserver answered the poll's send with `eventId`. False (and nothing kept)
   * when that id is already another poll's: the homeserver answered with an old id.
   */
  posted(requestId: number, eventId: string): boolean;
  nonceOf(requestId: number): string | undefined;
  /** The request whose poll's send was answered with `eventId`. */
  requestOfPoll(eventId: string): number | undefined;
}

const PollRowSchema = z.strictObject({
  request_id: z.number().int().positive(),
  nonce: z.string().regex(NONCE),
  poll_event_id: z.string().min(1).nullable(),
  created_at: z.number().int(),
});

/** The table, its rules in the schema itself: a nonce never changes, nothing is deleted. */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS approval_polls (
    request_id    INTEGER PRIMARY KEY REFERENCES requests (id),
    nonce         TEXT    NOT NULL CHECK (length(nonce) = 32),
    poll_event_id TEXT    UNIQUE CHECK (poll_event_id IS NULL OR length(poll_event_id) > 0),
    created_at    INTEGER NOT NULL
  ) STRICT;
  CREATE TRIGGER IF NOT EXISTS approval_polls_fixed
    BEFORE UPDATE OF request_id, nonce, created_at ON approval_polls
    BEGIN SELECT RAISE(ABORT, 'a poll nonce is never rewritten'); END;
  CREATE TRIGGER IF NOT EXISTS approval_polls_posted_once
    BEFORE UPDATE OF poll_event_id ON approval_polls WHEN OLD.poll_event_id IS NOT NULL
    BEGIN SELECT RAISE(ABORT, 'a poll is posted once'); END;
  CREATE TRIGGER IF NOT EXISTS approval_polls_kept BEFORE DELETE ON approval_polls
    BEGIN SELECT RAISE(ABORT, 'poll nonces are never deleted'); END;
`;

export class PollNonces implements PollNonceStore {
  readonly #db: Database.Database;
  readonly #now: Clock;

  constructor(database: GrantDatabase) {
    ({ db: this.#db, now: this.#now } = ownTables(database, SCHEMA));
  }

  create(requestId: number, nonce: string): void {
    this.#db
      .prepare('INSERT INTO approval_polls (request_id, nonce, created_at) VALUES (?, ?, ?)')
      .run(requestId, nonce, this.#now());
  }

  posted(requestId: number, eventId: string): boolean {
    if (this.requestOfPoll(eventId) !== undefined) return false;
    const info = this.#db
      .prepare(
        'UPDATE approval_polls SET poll_event_id = ? WHERE request_id = ? AND poll_event_id IS NULL',
      )
      .run(eventId, requestId);
    return info.changes === 1;
  }

  nonceOf(requestId: number): string | undefined {
    return this.#row('request_id', requestId)?.nonce;
  }

  requestOfPoll(eventId: string): number | undefined {
    return this.#row('poll_event_id', eventId)?.request_id;
  }

  #row(
    column: 'request_id' | 'poll_event_id',
    value: number | string,
  ): z.infer<typeof PollRowSchema> | undefined {
    const row = this.#db.prepare(`SELECT * FROM approval_polls WHERE ${column} = ?`).get(value);
    if (row === undefined) return undefined;
    const parsed = PollRowSchema.safeParse(row);
    // Security: a row that does not fit (a damaged or hand-edited database) binds no vote.
    return parsed.success ? parsed.data : undefined;
  }
}

/** Poll nonces in memory, for a store without a database (lost on a restart). */
export class MemoryPollNonces implements PollNonceStore {
  readonly #nonces = new Map<number, string>();
  readonly #polls = new Map<string, number>();

  create(requestId: number, nonce: string): void {
    if (this.#nonces.has(requestId)) throw new Error(`request ${requestId} has a poll already`);
    this.#nonces.set(requestId, nonce);
  }

  posted(requestId: number, eventId: string): boolean {
    if (this.#polls.has(eventId) || !this.#nonces.has(requestId)) return false;
    this.#polls.set(eventId, requestId);
    return true;
  }

  nonceOf(requestId: number): string | undefined {
    return this.#nonces.get(requestId);
  }

  requestOfPoll(eventId: string): number | undefined {
    return this.#polls.get(eventId);
  }
}
