/**
 * Which of the approver's 👍 reactions made which approval (docs/architecture.md), so that
 * withdrawing the 👍 can revoke what it granted, after a restart too. Kept in the grant
 * database (table approval_reactions, migration 2) beside the requests it points to;
 * `MemoryReactionLinks` keeps them in memory for a store without a database.
 */
import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { Clock } from '../base/domain.js';
import { invalid, isPositiveInt, type GrantDatabase } from '../grants/database.js';
import { IdSchema, parseRow, TimeSchema } from '../grants/rows.js';

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

const ApprovalReactionRowSchema = z.strictObject({
  event_id: z.string().min(1),
  request_id: IdSchema,
  room_id: z.string().min(1),
  approver: z.string().min(1),
  created_at: TimeSchema,
  undone_at: TimeSchema.nullable(),
});

/** The approver's 👍 that approved a request (a chat event), as recorded. */
export interface ApprovalReaction {
  eventId: string;
  requestId: number;
  roomId: string;
  approver: string;
  createdAt: number;
  /** When its withdrawal was acted on; null while it still stands. */
  undoneAt: number | null;
}

/** Where the engine remembers approving reactions. */
export interface ReactionLinkStore {
  /** Records the link; false when the event was already recorded (unchanged). */
  record(link: ApprovalReactionLink): boolean;
  /** Marks it undone and returns its request, or undefined (see ReactionLinks.take). */
  take(eventId: string, by: ReactionWithdrawal): number | undefined;
}

export class ReactionLinks implements ReactionLinkStore {
  readonly #db: Database.Database;
  readonly #now: Clock;

  constructor(database: GrantDatabase) {
    this.#db = database.db;
    this.#now = database.now;
  }

  /**
   * Remembers that the approver's reaction `eventId` approved `requestId`, so that
   * withdrawing it can revoke what it granted, across restarts (docs/architecture.md). Only for a
   * request that was approved. False when the event was already recorded (unchanged).
   */
  record(link: ApprovalReactionLink): boolean {
    if (!isChatId(link.eventId) || !isChatId(link.roomId) || !isChatId(link.approver)) {
      throw invalid('an approval reaction needs an event id, a room id and an approver');
    }
    const state = this.#requestState(link.requestId);
    if (state !== 'approved' && state !== 'partially_approved') {
      throw invalid(`request ${String(link.requestId)} was not approved; no reaction approved it`);
    }
    const info = this.#db
      .prepare(
        `INSERT INTO approval_reactions (event_id, request_id, room_id, approver, created_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
      )
      .run(link.eventId, link.requestId, link.roomId, link.approver, this.#now());
    return info.changes === 1;
  }

  /** The recorded reaction `eventId`, undone or not. */
  get(eventId: string): ApprovalReaction | undefined {
    if (!isChatId(eventId)) return undefined;
    const row = this.#db
      .prepare('SELECT * FROM approval_reactions WHERE event_id = ?')
      .get(eventId);
    return row === undefined ? undefined : toApprovalReaction(row);
  }

  /** The request whose approval the reaction `eventId` made and has not yet been undone. */
  requestOf(eventId: string): number | undefined {
    const r = this.get(eventId);
    return r === undefined || r.undoneAt !== null ? undefined : r.requestId;
  }

  /**
   * The reaction `eventId` was withdrawn: marks it undone and returns the request it had
   * approved, or undefined (not an approving reaction, already undone, or withdrawn
   * elsewhere or by someone else). The caller then revokes that request's grants.
   */
  take(eventId: string, by: ReactionWithdrawal): number | undefined {
    if (!isChatId(eventId) || !isChatId(by.roomId) || !isChatId(by.approver)) return undefined;
    // Security: only the approver who reacted, in the room where they did, undoes their
    // approval, and only once (a replayed redaction finds the link already undone).
    const row = this.#db
      .prepare(
        `UPDATE approval_reactions SET undone_at = ?
         WHERE event_id = ? AND room_id = ? AND approver = ? AND undone_at IS NULL
         RETURNING *`,
      )
      .get(this.#now(), eventId, by.roomId, by.approver);
    return row === undefined ? undefined : toApprovalReaction(row).requestId;
  }

  #requestState(requestId: unknown): string | undefined {
    if (!isPositiveInt(requestId)) return undefined;
    const row = this.#db.prepare('SELECT state FROM requests WHERE id = ?').get(requestId) as
      { state?: unknown } | undefined;
    return typeof row?.state === 'string' ? row.state : undefined;
  }
}

/** The in-memory fallback remembers this many approving reactions. */
const REMEMBERED_REACTIONS = 10_000;

/** Approving reactions remembered in memory (oldest forgotten first); lost on a restart. */
export class MemoryReactionLinks implements ReactionLinkStore {
  readonly #links = new Map<string, { requestId: number; roomId: string; approver: string }>();

  record(link: ApprovalReactionLink): boolean {
    const known = this.#links.has(link.eventId);
    this.#links.delete(link.eventId);
    this.#links.set(link.eventId, link);
    const oldest = this.#links.keys().next();
    if (this.#links.size > REMEMBERED_REACTIONS && !oldest.done) this.#links.delete(oldest.value);
    return !known;
  }

  take(eventId: string, by: ReactionWithdrawal): number | undefined {
    const link = this.#links.get(eventId);
    // Security: only the approver who reacted, in that room, and only once.
    if (link === undefined || link.roomId !== by.roomId || link.approver !== by.approver) {
      return undefined;
    }
    this.#links.delete(eventId);
    return link.requestId;
  }
}

function toApprovalReaction(row: unknown): ApprovalReaction {
  const r = parseRow(ApprovalReactionRowSchema, row, 'approval_reactions');
  return {
    eventId: r.event_id,
    requestId: r.request_id,
    roomId: r.room_id,
    approver: r.approver,
    createdAt: r.created_at,
    undoneAt: r.undone_at,
  };
}
