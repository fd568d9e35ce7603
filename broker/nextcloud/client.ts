/**
 * One Nextcloud instance, spoken to over WebDAV (files) and OCS (capabilities): the
 * client the pipeline's steps receive (as operations/ports.ts NextcloudPort).
 *
 * Every verb takes a canonical path — the exact value the wall checked — and, last, the
 * operation's abort signal (a grant that ends stops the request: see connection.ts);
 * the client alone turns the path into a URL (see url.ts). '' is the instance root and
 * is accepted only by `list`. Every error leaving this class is a NextcloudError whose
 * one-line message names the cause and the next step, scrubbed of the app password in
 * every spelling. The parts: connection.ts (credentials, transport, retries, errors),
 * files.ts (list, mkdir, move, trash; mounts.ts what trash refuses), search.ts (SEARCH),
 * transfers.ts (the read stream), uploads.ts and chunked.ts (uploads that commit once),
 * locks.ts (LOCK, UNLOCK, a confirmed release), inspect.ts (lock and mount properties),
 * capabilities.ts, and for calendars and address books collections.ts,
 * calendar-events.ts, calendar-create.ts and contacts.ts (each collection named by one
 * component: see groupware-url.ts).
 */
import type { Readable } from 'node:stream';
import { DEFAULT_CHUNK_SIZE } from '../base/limits.js';
import { createEvent, type CreatedEvent, type NewEvent } from './calendar-create.js';
import type { CalendarEvent } from './calendar-event.js';
import { calendarEvents, type EventWindow } from './calendar-events.js';
import { CapabilitiesCache, type Capabilities } from './capabilities.js';
import { listCollections, type Collection } from './collections.js';
import { searchContacts, type Contact } from './contacts.js';
import { NextcloudConnection, type ConnectionDeps, type NextcloudInstance } from './connection.js';
import { createCursorCodec, type CursorCodec } from './cursor.js';
import { listFolder, makeFolder, move, trash } from './files.js';
import { inspect, type Inspection } from './inspect.js';
import { lock, releaseLock, unlock, type Released } from './locks.js';
import { NamespaceLock } from './namespace-lock.js';
import type { CollectionKind } from './groupware-url.js';
import type { Entry } from './multistatus.js';
import { searchFolder, type SearchPage } from './search.js';
import { readSpace, type Space } from './space.js';
import {
  readStream,
  type ConditionalReadOptions,
  type FileStream,
  type ReadOptions,
  type Unchanged,
} from './transfers.js';
import { upload, type WriteCondition, type Written } from './uploads.js';

export type { Entry } from './multistatus.js';
export type { CalendarEvent } from './calendar-event.js';
export type { CreatedEvent, NewEvent } from './calendar-create.js';
export type { EventWindow } from './calendar-events.js';
export type { Collection } from './collections.js';
export type { Contact } from './contacts.js';
export type { CollectionKind } from './groupware-url.js';
export type { Capabilities } from './capabilities.js';
export type { Inspection, LockFacts, MountFacts } from './inspect.js';
export type { Released } from './locks.js';
export type { SearchPage } from './search.js';
export type { Space } from './space.js';
export type { NextcloudInstance } from './connection.js';
export type { WriteCondition, Written } from './uploads.js';

export interface NextcloudClientDeps extends ConnectionDeps {
  /** How long capabilities are cached. Default 60 s. */
  capabilitiesTtlMs?: number;
  /**
   * The chunk size of chunked uploads (replacements). Default: the server's announced
   * largest chunk (`files.chunked_upload.max_size`), else 16 MiB.
   */
  chunkSize?: number;
  /** The largest new file sent as one PUT (below a proxy's body limit). Default: none. */
  putLimit?: number;
}

const DEFAULT_CAPABILITIES_TTL_MS = 60_000;
export { DEFAULT_CHUNK_SIZE };

export class NextcloudClient {
  readonly name: string;
  readonly #conn: NextcloudConnection;
  readonly #cursors: CursorCodec;
  readonly #capabilities: CapabilitiesCache;
  readonly #chunkSize: number | undefined;
  readonly #putLimit: number | undefined;
  readonly #namespace: NamespaceLock;

  constructor(instance: NextcloudInstance, deps: NextcloudClientDeps = {}) {
    this.name = instance.name;
    this.#conn = new NextcloudConnection(instance, deps);
    this.#cursors = createCursorCodec(instance.name, instance.app_password);
    this.#capabilities = new CapabilitiesCache(
      this.#conn,
      deps.capabilitiesTtlMs ?? DEFAULT_CAPABILITIES_TTL_MS,
    );
    this.#chunkSize = deps.chunkSize;
    this.#putLimit = deps.putLimit;
    this.#namespace = new NamespaceLock(instance.name);
  }

  /** Drop kept-alive connections (on shutdown, and in tests). */
  close(): void {
    this.#conn.close();
  }

  /**
   * Children of a folder ('' = root), folders first then by code point; `pageSize`
   * 1-1000. `next` is a signed cursor for this instance and path only.
   */
  list(
    path: string,
    cursor?: string,
    pageSize = 200,
    signal?: AbortSignal,
  ): Promise<{ entries: Entry[]; next?: string }> {
    return this.#conn.guard(() =>
      listFolder(this.#conn, this.#cursors, path, cursor, pageSize, signal),
    );
  }

  /**
   * Names below a folder ('' = the whole account) that contain `term` (canonical, see
   * base/search-term.ts), in name order; `pageSize` 1-200. `next` is a signed cursor
   * for this instance, folder and term only.
   */
  search(
    path: string,
    term: string,
    cursor?: string,
    pageSize = 100,
    signal?: AbortSignal,
  ): Promise<SearchPage> {
    return this.#conn.guard(() =>
      searchFolder(this.#conn, this.#cursors, path, term, cursor, pageSize, signal),
    );
  }

  /** One file or folder (PROPFIND Depth 0). */
  stat(path: string, signal?: AbortSignal): Promise<Entry> {
    return this.#conn.guard(() => this.#conn.stat(path, signal));
  }

  /** One file or folder with its lock and mount properties (PROPFIND Depth 0). */
  inspect(path: string, signal?: AbortSignal): Promise<Inspection> {
    return this.#conn.guard(() => inspect(this.#conn, path, signal));
  }

  /**
   * Stream a file's bytes with one GET (folders are refused); `range` is inclusive.
   * With `ifNoneMatch` (an etag the caller holds), a file still at that etag answers
   * Unchanged and streams nothing. The stream fails with a NextcloudError on a stall
   * (idle timeout) or a cut.
   */
  readStream(path: string, options: ConditionalReadOptions): Promise<FileStream | Unchanged>;
  readStream(path: string, options?: ReadOptions): Promise<FileStream>;
  readStream(
    path: string,
    options: ConditionalReadOptions | ReadOptions = {},
  ): Promise<FileStream | Unchanged> {
    return this.#conn.guard(() => readStream(this.#conn, path, options));
  }

  /**
   * Upload exactly `size` bytes of `body` to a file under exactly one condition,
   * committed once, after `beforeCommit` passed (see uploads.ts); answers Nextcloud's
   * sha256 of what it stored. Never retried; on failure the body may be partly read.
   */
  async upload(
    path: string,
    body: Readable,
    cond: WriteCondition,
    size: number,
    options: { beforeCommit?: () => void | Promise<void>; signal?: AbortSignal } = {},
  ): Promise<Written> {
    // The caller's refusal at the commit point is its own error: it leaves as it was
    // thrown, not as a Nextcloud failure.
    let refusal: { error: unknown } | undefined;
    const beforeCommit = async (): Promise<void> => {
      try {
        await options.beforeCommit?.();
      } catch (error) {
        refusal = { error };
        throw error;
      }
    };
    try {
      return await this.#conn.guard(async () =>
        upload(this.#conn, path, body, cond, size, {
          beforeCommit,
          signal: options.signal,
          ...(this.#putLimit === undefined ? {} : { putLimit: this.#putLimit }),
          // A new file goes up in one PUT; if that is refused (413), in chunks of the
          // smaller fixed size: whatever refused the body may refuse a large chunk too.
          chunkSize:
            'ifNoneMatch' in cond
              ? (this.#chunkSize ?? DEFAULT_CHUNK_SIZE)
              : await this.#replacementChunkSize(options.signal),
        }),
      );
    } catch (error) {
      if (refusal !== undefined) throw refusal.error;
      throw error;
    }
  }

  /** The configured chunk size, else the server's largest (fewer requests), else 16 MiB. */
  async #replacementChunkSize(signal: AbortSignal | undefined): Promise<number> {
    if (this.#chunkSize !== undefined) return this.#chunkSize;
    try {
      return (await this.#capabilities.get(signal)).maxChunkSize ?? DEFAULT_CHUNK_SIZE;
    } catch {
      // The capabilities are an optimisation here: any chunk size Nextcloud takes works.
      return DEFAULT_CHUNK_SIZE;
    }
  }

  /** Create one folder (its parent must exist). */
  mkdir(path: string, signal?: AbortSignal): Promise<void> {
    return this.#conn.guard(() =>
      this.#namespace.run(() => makeFolder(this.#conn, path, signal), signal),
    );
  }

  /** Rename or move; never overwrites an existing target. */
  move(from: string, to: string, signal?: AbortSignal): Promise<void> {
    // Security: a move waits for a trash's check and DELETE to finish (and the reverse),
    // so it can never carry a received share into a folder already checked for one.
    return this.#conn.guard(() =>
      this.#namespace.run(() => move(this.#conn, from, to, signal), signal),
    );
  }

  /**
   * Delete into the trash bin; refused when the trash bin is off, and for a mount (a
   * received share, an external storage) or a folder holding one: see mounts.ts.
   */
  trash(path: string, signal?: AbortSignal): Promise<void> {
    // Security: the check for shares and mounts and the DELETE it allows are one step
    // for this instance's namespace: no move or mkdir of the broker's runs in between.
    return this.#conn.guard(() =>
      this.#namespace.run(() => trash(this.#conn, this.#capabilities, path, signal), signal),
    );
  }

  /** RFC 4918 exclusive write lock on an existing file; returns `opaquelocktoken:…`. */
  lock(path: string, timeoutSeconds: number, signal?: AbortSignal): Promise<{ token: string }> {
    return this.#conn.guard(() => lock(this.#conn, path, timeoutSeconds, signal));
  }

  /** UNLOCK alone (its answer proves little: see `releaseLock`). */
  unlock(path: string, token: string): Promise<void> {
    return this.#conn.guard(() => unlock(this.#conn, path, token));
  }

  /** Release a lock taken by `lock`, confirmed by its lock properties (see locks.ts). */
  releaseLock(path: string, token: string): Promise<Released> {
    return this.#conn.guard(() => releaseLock(this.#conn, path, token));
  }

  /** The user's calendars (`calendar`) or address books (`contacts`), by URI name. */
  collections(kind: CollectionKind, signal?: AbortSignal): Promise<Collection[]> {
    return this.#conn.guard(() => listCollections(this.#conn, kind, signal));
  }

  /**
   * The events of a calendar in `window` (at most 366 days), recurrences expanded by
   * Nextcloud, times in UTC, sorted; `next` is a signed cursor for this calendar and
   * window only. `pageSize` 1-500.
   */
  calendarEvents(
    calendar: string,
    window: EventWindow,
    opts: { cursor?: string | undefined; pageSize?: number; includeText?: boolean } = {},
    signal?: AbortSignal,
  ): Promise<{ events: CalendarEvent[]; next?: string }> {
    return this.#conn.guard(() =>
      calendarEvents(
        this.#conn,
        this.#cursors,
        calendar,
        window,
        {
          cursor: opts.cursor,
          pageSize: opts.pageSize ?? 100,
          includeText: opts.includeText === true,
        },
        signal,
      ),
    );
  }

  /** Create one event (never replaces anything) and read back what was stored. */
  createEvent(calendar: string, event: NewEvent, signal?: AbortSignal): Promise<CreatedEvent> {
    return this.#conn.guard(() => createEvent(this.#conn, calendar, event, signal));
  }

  /**
   * Cards of an address book whose full name or an e-mail address contains `query`
   * (Nextcloud's matching: see contacts.ts); `truncated` when more than `limit` matched.
   */
  searchContacts(
    addressbook: string,
    query: string,
    opts: { limit?: number; includeText?: boolean } = {},
    signal?: AbortSignal,
  ): Promise<{ contacts: Contact[]; truncated: boolean }> {
    return this.#conn.guard(() =>
      searchContacts(
        this.#conn,
        addressbook,
        query,
        { limit: opts.limit ?? 25, includeText: opts.includeText === true },
        signal,
      ),
    );
  }

  /**
   * The quota, the bytes the files take and the trash bin's size, read afresh (and with
   * `path`, that item's size): see space.ts.
   */
  space(path?: string, signal?: AbortSignal): Promise<Space> {
    return this.#conn.guard(() => readSpace(this.#conn, path, signal));
  }

  /** Trash bin and locking support, cached for `capabilitiesTtlMs` (60 s). */
  capabilities(signal?: AbortSignal): Promise<Capabilities> {
    return this.#conn.guard(() => this.#capabilities.get(signal));
  }
}
