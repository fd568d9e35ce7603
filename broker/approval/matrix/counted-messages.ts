/**
 * Each message from a pinned device that the bot acts on counts once, by the Megolm
 * session and message index that encrypted it (megolm-key.ts), under whatever event id
 * the homeserver serves it, across restarts: a repeat is a replay, refused and never
 * recorded as another decision.
 *
 * Kept in the grant database, in the table this module owns (approval_messages,
 * created here); in memory for a store without a database.
 */
import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { Clock } from '../../base/domain.js';
import type { GrantDatabase } from '../../grants/index.js';
import type { MegolmKey } from './megolm-key.js';
import { ownTables } from './own-tables.js';

export type CountResult = { first: true } | { first: false; firstEventId: string };

export interface CountedMessageStore {
  /** Counts the message `key`, seen as `eventId`; or says under which id it was counted. */
  count(key: MegolmKey, eventId: string): CountResult;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS approval_messages (
    session_id    TEXT    NOT NULL CHECK (length(session_id) > 0),
    message_index INTEGER NOT NULL CHECK (message_index >= 0),
    event_id      TEXT    NOT NULL CHECK (length(event_id) > 0),
    counted_at    INTEGER NOT NULL,
    PRIMARY KEY (session_id, message_index)
  ) STRICT;
  CREATE TRIGGER IF NOT EXISTS approval_messages_fixed BEFORE UPDATE ON approval_messages
    BEGIN SELECT RAISE(ABORT, 'a counted message is never rewritten'); END;
  CREATE TRIGGER IF NOT EXISTS approval_messages_kept BEFORE DELETE ON approval_messages
    BEGIN SELECT RAISE(ABORT, 'counted messages are never deleted'); END;
`;

const FirstSeenSchema = z.object({ event_id: z.string().min(1) });

export class CountedMessages implements CountedMessageStore {
  readonly #db: Database.Database;
  readonly #now: Clock;

  constructor(database: GrantDatabase) {
    ({ db: this.#db, now: this.#now } = ownTables(database, SCHEMA));
  }

  count(key: MegolmKey, eventId: string): CountResult {
    // One statement: counting and finding it counted cannot interleave.
    const inserted = this.#db
      .prepare(
        `INSERT INTO approval_messages (session_id, message_index, event_id, counted_at)
         VALUES (?, ?, ?, ?) ON CONFLICT (session_id, message_index) DO NOTHING`,
      )
      .run(key.sessionId, key.index, eventId, this.#now());
    if (inserted.changes === 1) return { first: true };
    const row = this.#db
      .prepare('SELECT event_id FROM approval_messages WHERE session_id = ? AND message_index = ?')
      .get(key.sessionId, key.index);
    const parsed = FirstSeenSchema.safeParse(row);
    return { first: false, firstEventId: parsed.success ? parsed.data.event_id : 'unknown' };
  }
}

/** Counted messages in memory, for a store without a database (lost on a restart). */
export class MemoryCountedMessages implements CountedMessageStore {
  readonly #seen = new Map<string, string>();

  count(key: MegolmKey, eventId: string): CountResult {
    const id = `${key.sessionId}\u0000${key.index}`;
    const first = this.#seen.get(id);
    if (first !== undefined) return { first: false, firstEventId: first };
    this.#seen.set(id, eventId);
    return { first: true };
  }
}
