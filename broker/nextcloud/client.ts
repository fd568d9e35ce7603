/**
 * One Nextcloud instance, spoken to over WebDAV (files) and OCS (capabilities): the
 * client the pipeline's steps receive (operations/ports.ts names it as NextcloudPort, a
 * view of this class's own type).
 *
 * Every verb takes a canonical path — the exact value the wall checked — and, last, the
 * operation's abort signal (a grant that ends stops the request: see connection.ts);
 * the client alone turns the path into a URL (see url.ts). '' is the instance root and
 * is accepted only by `list` and `search`. Every error leaving this class is a
 * NextcloudError whose one-line message names the cause and the next step, scrubbed of
 * the app password in every spelling (the connection's `guard`).
 *
 * A verb is declared once, in its own module, taking the instance's Session first (the
 * parts it uses): the client exposes it as it is through `#verb`. The modules:
 * connection.ts (credentials, transport, retries, errors), files.ts (list, mkdir, move),
 * trash.ts (trash under a unique name; mounts.ts what trash refuses), search.ts (SEARCH), inspect.ts (stat, and the
 * lock and mount properties), transfers.ts (the read stream), uploads.ts and chunked.ts
 * (uploads that commit once), locks.ts (LOCK, UNLOCK, a confirmed release), space.ts,
 * capabilities.ts, and for calendars and address books collections.ts,
 * calendar-events.ts, calendar-create.ts and contacts.ts (each collection named by one
 * component: see groupware-url.ts). What Nextcloud keeps beside the files, for
 * reconciliation and undo: activity.ts (the Activity stream; activity-rows.ts its rows one
 * change each), versions.ts, trashbin.ts
 * and calendar-trash.ts (URLs in history-url.ts).
 *
 * Every answer's `X-Request-Id` (and `OC-FileId` / `OC-ETag`) goes to the sink of the
 * `recording` scope the request was sent in (answers.ts), else to `deps.onAnswer`.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DEFAULT_CHUNK_SIZE } from '../base/limits.js';
import { readActivity } from './activity.js';
import { readActivityRows } from './activity-rows.js';
import type { AnswerSink } from './answers.js';
import {
  eventEtag,
  listCalendarTrash,
  restoreCalendarEvent,
  trashEvent,
} from './calendar-trash.js';
import { createEvent } from './calendar-create.js';
import { calendarEvents } from './calendar-events.js';
import { CapabilitiesCache, readCapabilities } from './capabilities.js';
import { listCollections } from './collections.js';
import { searchContacts } from './contacts.js';
import { NextcloudConnection, type ConnectionDeps, type NextcloudInstance } from './connection.js';
import { createCursorCodec } from './cursor.js';
import { listFolder, makeFolder, move, type Placed } from './files.js';
import { inspect, stat } from './inspect.js';
import { lock, releaseLock, unlock } from './locks.js';
import { NamespaceLock } from './namespace-lock.js';
import { searchFolder } from './search.js';
import type { Session } from './session.js';
import { readOwnSpace, readSpace } from './space.js';
import { trash } from './trash.js';
import { listTrash, restoreTrash } from './trashbin.js';
import {
  readStream,
  type ConditionalReadOptions,
  type FileStream,
  type ReadOptions,
  type Unchanged,
} from './transfers.js';
import { upload, type WriteCondition, type Written } from './uploads.js';
import { listVersions, restoreVersion, versionSaved } from './versions.js';

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
export type { Activity, ActivityPage, ActivityQuery, RichParameter } from './activity.js';
export type { ActivityRows, ActivityRowsQuery } from './activity-rows.js';
export type { AnswerSink, NextcloudAnswer } from './answers.js';
export type { TrashedEvent } from './calendar-trash.js';
export type { RestoredItem, TrashItem } from './trashbin.js';
export type { FileVersion } from './versions.js';
export type { SearchPage } from './search.js';
export type { OwnSpace, SharerSpace, Space, SpaceTarget } from './space.js';
export type { TrashOutcome } from './trash.js';
export type { NextcloudInstance } from './connection.js';
export type { FileStream, ReadOptions, ConditionalReadOptions, Unchanged } from './transfers.js';
export type { WriteCondition, Written } from './uploads.js';
export type { Placed } from './files.js';

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
  /** The random word of a trashed item's unique name. Default: 8 random letters and digits. */
  trashTag?: () => string;
}

/** Eight random letters and digits (40 bits): a trashed item's name is nobody else's. */
export function randomTrashTag(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return Array.from(randomBytes(8), (b) => alphabet[b & 31]).join('');
}

const DEFAULT_CAPABILITIES_TTL_MS = 60_000;
export { DEFAULT_CHUNK_SIZE };

export class NextcloudClient {
  readonly name: string;
  readonly #conn: NextcloudConnection;
  readonly #session: Session;

  constructor(instance: NextcloudInstance, deps: NextcloudClientDeps = {}) {
    this.name = instance.name;
    this.#conn = new NextcloudConnection(instance, deps);
    this.#session = {
      conn: this.#conn,
      cursors: createCursorCodec(instance.name, instance.app_password),
      capabilities: new CapabilitiesCache(
        this.#conn,
        deps.capabilitiesTtlMs ?? DEFAULT_CAPABILITIES_TTL_MS,
      ),
      namespace: new NamespaceLock(instance.name),
      chunkSize: deps.chunkSize,
      putLimit: deps.putLimit,
      trashTag: deps.trashTag ?? randomTrashTag,
    };
  }

  /** A verb of this instance, its errors scrubbed NextcloudErrors (see connection.ts). */
  #verb<A extends unknown[], R>(
    run: (session: Session, ...args: A) => Promise<R>,
  ): (...args: A) => Promise<R> {
    // Reads the session when called: the fields below are set before the constructor runs.
    return (...args) => this.#conn.guard(() => run(this.#session, ...args));
  }

  // Each verb is declared (and documented) in its module; see the top of this file.
  readonly list = this.#verb(listFolder);
  readonly search = this.#verb(searchFolder);
  readonly stat = this.#verb(stat);
  readonly inspect = this.#verb(inspect);
  readonly mkdir = this.#verb(makeFolder);
  readonly trash = this.#verb(trash);
  readonly lock = this.#verb(lock);
  readonly unlock = this.#verb(unlock);
  readonly releaseLock = this.#verb(releaseLock);
  readonly collections = this.#verb(listCollections);
  readonly calendarEvents = this.#verb(calendarEvents);
  readonly createEvent = this.#verb(createEvent);
  readonly searchContacts = this.#verb(searchContacts);
  readonly space = this.#verb(readSpace);
  readonly ownSpace = this.#verb(readOwnSpace);
  readonly capabilities = this.#verb(readCapabilities);
  readonly activity = this.#verb(readActivity);
  readonly activityRows = this.#verb(readActivityRows);
  readonly versions = this.#verb(listVersions);
  readonly restoreVersion = this.#verb(restoreVersion);
  readonly versionSaved = this.#verb(versionSaved);
  readonly trashbin = this.#verb(listTrash);
  readonly restoreTrash = this.#verb(restoreTrash);
  readonly calendarTrash = this.#verb(listCalendarTrash);
  readonly restoreEvent = this.#verb(restoreCalendarEvent);
  readonly trashEvent = this.#verb(trashEvent);
  readonly eventEtag = this.#verb(eventEtag);

  /**
   * Runs `run`; the answer to every request it sends to this instance (its
   * `X-Request-Id`, and `OC-FileId` / `OC-ETag` where answered) goes to `sink`
   * (answers.ts). The pipeline runs each operation's step in one.
   */
  recording<T>(sink: AnswerSink, run: () => Promise<T>): Promise<T> {
    return this.#conn.answers.collect(sink, run);
  }

  /** Drop kept-alive connections (on shutdown, and in tests). */
  close(): void {
    this.#conn.close();
  }

  /**
   * Stream a file's bytes with one GET (see transfers.ts). A method, not a `#verb`: its
   * overloads say that only a read with `ifNoneMatch` can answer Unchanged.
   */
  readStream(path: string, options: ConditionalReadOptions): Promise<FileStream | Unchanged>;
  readStream(path: string, options?: ReadOptions): Promise<FileStream>;
  readStream(
    path: string,
    options: ConditionalReadOptions | ReadOptions = {},
  ): Promise<FileStream | Unchanged> {
    return this.#conn.guard(() => readStream(this.#session, path, options));
  }

  /**
   * Rename or move, never over an existing target (see files.ts), after `beforeMove`
   * passed inside the same namespace step. A method, not a `#verb`: the caller's refusal
   * in `beforeMove` leaves unscrubbed.
   */
  move(
    from: string,
    to: string,
    signal?: AbortSignal,
    beforeMove?: () => Promise<void>,
  ): Promise<Placed> {
    return this.#callerChecked(beforeMove, (check) => move(this.#session, from, to, signal, check));
  }

  /**
   * Upload exactly `size` bytes of `body` to a file under exactly one condition,
   * committed once, after `beforeCommit` passed (see uploads.ts); answers Nextcloud's
   * sha256 of what it stored. Never retried; on failure the body may be partly read.
   * A method, not a `#verb`: the caller's refusal at the commit point leaves unscrubbed.
   */
  upload(
    path: string,
    body: Readable,
    cond: WriteCondition,
    size: number,
    options: { beforeCommit?: () => void | Promise<void>; signal?: AbortSignal } = {},
  ): Promise<Written> {
    const { putLimit } = this.#session;
    return this.#callerChecked(options.beforeCommit, async (beforeCommit) =>
      upload(this.#conn, path, body, cond, size, {
        beforeCommit,
        signal: options.signal,
        ...(putLimit === undefined ? {} : { putLimit }),
        // A new file goes up in one PUT; if that is refused (413), in chunks of the
        // smaller fixed size: whatever refused the body may refuse a large chunk too.
        chunkSize:
          'ifNoneMatch' in cond
            ? (this.#session.chunkSize ?? DEFAULT_CHUNK_SIZE)
            : await this.#replacementChunkSize(options.signal),
      }),
    );
  }

  /**
   * Runs a verb (as `#verb` does) that calls the caller's `check` at its commit point.
   * The caller's refusal there is its own error: it leaves as it was thrown, not as a
   * Nextcloud failure.
   */
  async #callerChecked<R>(
    check: (() => void | Promise<void>) | undefined,
    run: (check: () => Promise<void>) => Promise<R>,
  ): Promise<R> {
    let refusal: { error: unknown } | undefined;
    const checked = async (): Promise<void> => {
      try {
        await check?.();
      } catch (error) {
        refusal = { error };
        throw error;
      }
    };
    try {
      return await this.#conn.guard(() => run(checked));
    } catch (error) {
      if (refusal !== undefined) throw refusal.error;
      throw error;
    }
  }

  /** The configured chunk size, else the server's largest (fewer requests), else 16 MiB. */
  async #replacementChunkSize(signal: AbortSignal | undefined): Promise<number> {
    const { chunkSize, capabilities } = this.#session;
    if (chunkSize !== undefined) return chunkSize;
    try {
      return (await capabilities.get(signal)).maxChunkSize ?? DEFAULT_CHUNK_SIZE;
    } catch {
      // The capabilities are an optimisation here: any chunk size Nextcloud takes works.
      return DEFAULT_CHUNK_SIZE;
    }
  }
}
