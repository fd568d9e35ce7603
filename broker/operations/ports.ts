/**
 * What the pipeline uses of its collaborators, as structural interfaces: the real
 * GrantStore, AuditLog, NextcloudClient and approval gateway satisfy them, and nothing
 * else of those modules is reachable from here.
 */
import type { AuditEvent } from '../audit/events.js';
import type { CalendarEvent } from '../nextcloud/calendar-event.js';
import type { CreatedEvent, NewEvent } from '../nextcloud/calendar-create.js';
import type { EventWindow } from '../nextcloud/calendar-events.js';
import type { Collection } from '../nextcloud/collections.js';
import type { Contact } from '../nextcloud/contacts.js';
import type { Entry } from '../nextcloud/multistatus.js';
import type { Readable } from 'node:stream';
import type {
  CheckoutLockEnd,
  CheckoutLockRecord,
  CollectionKind,
  EndedGrantView,
  GrantRecord,
  Kind,
  Mode,
  NewCheckoutLock,
  RequestRecord,
} from '../base/domain.js';

export interface ReadOptionsLike {
  readonly range?: { readonly start: number; readonly end?: number } | undefined;
  readonly signal?: AbortSignal | undefined;
}

export interface FileStreamLike {
  readonly unchanged: false;
  readonly stream: Readable;
  readonly size: number | null;
  readonly etag: string;
}

export interface GrantsPort {
  /** Grants in force now: not ended and `now < expiresAt`. */
  activeGrants(): GrantRecord[];
  /** Grants not yet ended, past their expiry or not, frozen (the wall checks expiry). */
  unendedGrants(): readonly GrantRecord[];
  /** The unended grants and the ended ones (revoked or marked expired), both frozen. */
  grantSnapshot(): {
    readonly unended: readonly GrantRecord[];
    readonly ended: readonly (GrantRecord & EndedGrantView)[];
  };
  grant(id: number): GrantRecord | undefined;
  getRequest(id: number): RequestRecord | undefined;
  /** A new pending request, unless `maxPending` already wait; then their ids. */
  createRequestWithin(
    input: {
      instance: string;
      reason: string;
      items: { kind: Kind; path: string; mode: Mode }[];
    },
    maxPending: number,
  ): { ok: true; request: RequestRecord } | { ok: false; pending: number[] };
  /** Requests still marked pending, oldest first (some may be past the timeout). */
  pendingRequests(): RequestRecord[];
  decide(id: number, d: { kind: 'deny'; by: string }): { ok: boolean };
  expirePending(timeoutMs: number): RequestRecord[];
  discardAllPending(): RequestRecord[];
  expireGrants(): GrantRecord[];
}

/** Where checkout locks are kept until Nextcloud confirms their release (grants/checkout-locks.ts). */
export interface CheckoutLocksPort {
  add(lock: NewCheckoutLock): CheckoutLockRecord;
  byToken(token: string): CheckoutLockRecord | undefined;
  /** Marks what must go now (grants ended, LOCK timed out); returns the releases due. */
  due(): CheckoutLockRecord[];
  releaseForGrants(grantIds: readonly number[], end: 'revoked' | 'expired'): CheckoutLockRecord[];
  markReleasing(lockId: number, end: CheckoutLockEnd, error?: string): void;
  attemptFailed(lockId: number, nextAttemptAt: number, error: string): void;
  released(lockId: number, end: CheckoutLockEnd, attempted: boolean): void;
}

export interface AuditPort {
  /** Resolves only once the line is durable; rejects when it cannot be written. */
  append(event: AuditEvent): Promise<unknown>;
}

export interface GatewayPort {
  healthy(): boolean;
  postRequest(request: RequestRecord): Promise<void>;
  /** `html`: the same notice for Matrix's formatted_body. */
  announce(text: string, html?: string): Promise<void>;
}

/** A notice for the owner, plain and HTML (built by broker/approval/format.ts). */
export interface NoticeText {
  plain: string;
  html: string;
}

/**
 * How the broker's own notices to the owner are worded. Injected (the approval layer
 * words them) so agent paths in them are escaped and capped like every other message.
 */
export interface OwnerNotices {
  grantsEnded(grants: readonly GrantRecord[], why: 'expired'): NoticeText;
  requestsEnded(requests: readonly RequestRecord[], why: 'expired' | 'discarded'): NoticeText;
}

/** A file or folder as a PROPFIND lists it (the client's own type). */
export type EntryLike = Entry;

export interface SpaceLike {
  quota: number | null;
  used: number;
  trash: number;
  item?: number;
}

// The Nextcloud client's own types, for the verbs and surfaces that name them.
export type { CalendarEvent, Collection, Contact, CreatedEvent, EventWindow, NewEvent };

export type WriteCondition =
  { ifMatch: string; lockToken?: string } | { ifNoneMatch: '*' } | { lockToken: string };

/** An item with the lock Nextcloud reports on it (token locks with their full token). */
export interface InspectionLike {
  entry: EntryLike;
  lock: { kind: 'token'; token: string } | { kind: 'user' | 'app' } | null;
}

/** A confirmed release: the UNLOCK removed the lock, or the token held nothing any more. */
export interface ReleasedLike {
  outcome: 'unlocked' | 'not_held';
  /** The file after the release; null when it no longer exists. */
  entry: EntryLike | null;
}

/**
 * The Nextcloud verbs the pipeline calls, always with a canonical path from the wall and
 * the operation's abort signal last (a grant that ends stops the request).
 */
export interface NextcloudPort {
  list(
    path: string,
    cursor?: string,
    pageSize?: number,
    signal?: AbortSignal,
  ): Promise<{ entries: EntryLike[]; next?: string }>;
  /** Names below the folder `path` ('' = the whole account) containing the canonical `term`. */
  search(
    path: string,
    term: string,
    cursor?: string,
    pageSize?: number,
    signal?: AbortSignal,
  ): Promise<{ entries: EntryLike[]; next?: string; outside: number }>;
  stat(path: string, signal?: AbortSignal): Promise<EntryLike>;
  inspect(path: string, signal?: AbortSignal): Promise<InspectionLike>;
  /** One GET; with `ifNoneMatch`, a file still at that etag answers `unchanged: true`. */
  readStream(
    path: string,
    options: ReadOptionsLike & { readonly ifNoneMatch: string | undefined },
  ): Promise<FileStreamLike | { readonly unchanged: true; readonly etag: string }>;
  readStream(path: string, options?: ReadOptionsLike): Promise<FileStreamLike>;
  /**
   * Uploads exactly `size` bytes, committed once after `beforeCommit` passed (throwing
   * there refuses the commit and leaves the destination unchanged); answers Nextcloud's
   * own sha256 of what it stored, null when it did not say.
   */
  upload(
    path: string,
    body: Readable,
    cond: WriteCondition,
    size: number,
    options?: { beforeCommit?: () => void | Promise<void>; signal?: AbortSignal },
  ): Promise<{ etag: string | null; sha256: string | null; chunked: boolean; warning?: string }>;
  mkdir(path: string, signal?: AbortSignal): Promise<void>;
  move(from: string, to: string, signal?: AbortSignal): Promise<void>;
  trash(path: string, signal?: AbortSignal): Promise<void>;
  lock(path: string, timeoutSeconds: number, signal?: AbortSignal): Promise<{ token: string }>;
  /** UNLOCK, then confirm from the lock properties; throws while the token still holds. */
  releaseLock(path: string, token: string): Promise<ReleasedLike>;
  capabilities(signal?: AbortSignal): Promise<{ undelete: boolean; locking: boolean }>;
  /** Quota (null: unlimited), bytes used by files, trash bin bytes; with `path` its size. */
  space(path?: string, signal?: AbortSignal): Promise<SpaceLike>;
  /** Calendars and address books (CalDAV/CardDAV), each named by one component. */
  collections(kind: CollectionKind, signal?: AbortSignal): Promise<Collection[]>;
  calendarEvents(
    calendar: string,
    window: EventWindow,
    opts?: { cursor?: string | undefined; pageSize?: number; includeText?: boolean },
    signal?: AbortSignal,
  ): Promise<{ events: CalendarEvent[]; next?: string }>;
  createEvent(calendar: string, event: NewEvent, signal?: AbortSignal): Promise<CreatedEvent>;
  searchContacts(
    addressbook: string,
    query: string,
    opts?: { limit?: number; includeText?: boolean },
    signal?: AbortSignal,
  ): Promise<{ contacts: Contact[]; truncated: boolean }>;
}
