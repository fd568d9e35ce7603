/**
 * Blob tickets: the capability to stream one file once.
 *
 * A ticket is 32 random bytes (base64url), usable once, within `ttlMs` (60 s) of being
 * issued, and bound to the instance, canonical path, direction and grant ids it was
 * issued for; whoever redeems it still passes the wall and a live-grant check.
 * Tickets are kept by their sha256, so a lookup never compares secret bytes directly
 * and a memory dump holds no usable ticket.
 */
import { createHash, randomBytes as nodeRandomBytes } from 'node:crypto';
import type { Clock } from '../base/domain.js';
import type { Entry, WriteCondition } from '../nextcloud/client.js';

export type TicketKind = 'read' | 'write' | 'checkin';

export interface TicketGrant {
  readonly instance: string;
  /** Canonical, as the wall returned it. */
  readonly path: string;
  readonly kind: TicketKind;
  readonly grantIds: readonly number[];
  /** Uploads: the exact number of bytes the PUT must carry. */
  readonly size?: number;
  /** write: the precondition to send; checkin: the lock token. */
  readonly condition?: WriteCondition;
  /** checkin: the lock token to upload under and release. */
  readonly lockToken?: string;
  /** Uploads: the sha256 the client declared for the body (lowercase hex), if it did. */
  readonly sha256?: string;
  /**
   * Uploads over a file: the file as the ticket's step read it (its id, mtime, size and
   * ETag), for the outcome's record of what the upload replaced (undo finds the version
   * Nextcloud keeps of it by that mtime). The upload's condition makes sure it is still
   * that content when it is replaced (If-Match, or the broker's lock).
   */
  readonly replaces?: Entry;
  /**
   * Uploads: the correlation id of the `write` or `checkin` call that issued it. The
   * upload's intent names it (`ticket_call`), so the log ties the ticket's record to the
   * upload it allowed (undo points an owner who picked the ticket's record there).
   */
  readonly issuedBy?: string;
}

export interface Ticket extends TicketGrant {
  readonly id: string;
  readonly expiresAt: number;
}

export const TICKET_TTL_MS = 60_000;
const TICKET_SHAPE = /^[A-Za-z0-9_-]{43}$/;

const keyOf = (id: string): string => createHash('sha256').update(id, 'utf8').digest('hex');

export class TicketBook {
  readonly #tickets = new Map<string, Ticket>();
  /**
   * Tickets dropped because their grants ended, kept (unusable) until their own expiry so
   * that a redemption can be told the grant was revoked or expired, not "unknown".
   */
  readonly #ended = new Map<string, Ticket>();
  readonly #now: Clock;
  readonly #random: (n: number) => Buffer;
  readonly #ttlMs: number;

  constructor(deps: { now: Clock; randomBytes?: (n: number) => Buffer; ttlMs?: number }) {
    this.#now = deps.now;
    this.#random = deps.randomBytes ?? nodeRandomBytes;
    this.#ttlMs = deps.ttlMs ?? TICKET_TTL_MS;
  }

  issue(grant: TicketGrant): Ticket {
    this.sweep();
    const id = this.#random(32).toString('base64url');
    const ticket: Ticket = { ...grant, id, expiresAt: this.#now() + this.#ttlMs };
    this.#tickets.set(keyOf(id), ticket);
    return ticket;
  }

  /**
   * Redeems a ticket: returns it and forgets it (single use), or undefined when it is
   * unknown, used or expired.
   */
  take(id: string): Ticket | undefined {
    // Security: malformed ids are rejected before any lookup.
    if (!TICKET_SHAPE.test(id)) return undefined;
    const key = keyOf(id);
    const ticket = this.#tickets.get(key);
    this.#tickets.delete(key);
    if (ticket === undefined) return undefined;
    // Security: a ticket not redeemed in time is dead; expiry is exclusive like grants'.
    return this.#now() < ticket.expiresAt ? ticket : undefined;
  }

  /** Withdraws every ticket relying on one of these grants (revoke/expiry). */
  dropForGrants(grantIds: readonly number[]): number {
    const ended = new Set(grantIds);
    let dropped = 0;
    for (const [key, ticket] of this.#tickets) {
      if (ticket.grantIds.some((g) => ended.has(g))) {
        // Security: gone from the usable book at once; `take` never returns it again.
        this.#tickets.delete(key);
        this.#ended.set(key, ticket);
        dropped += 1;
      }
    }
    return dropped;
  }

  /**
   * A ticket withdrawn because its grants ended, once (then forgotten), while it would
   * still have been valid: only to say why it cannot be used.
   */
  takeEnded(id: string): Ticket | undefined {
    if (!TICKET_SHAPE.test(id)) return undefined;
    const key = keyOf(id);
    const ticket = this.#ended.get(key);
    this.#ended.delete(key);
    return ticket !== undefined && this.#now() < ticket.expiresAt ? ticket : undefined;
  }

  /** Forgets expired tickets. */
  sweep(): void {
    const now = this.#now();
    for (const book of [this.#tickets, this.#ended]) {
      for (const [key, ticket] of book) if (!(now < ticket.expiresAt)) book.delete(key);
    }
  }

  get size(): number {
    return this.#tickets.size;
  }
}
