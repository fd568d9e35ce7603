/**
 * Public types of the fake Nextcloud (fakes/nextcloud.ts re-exports them).
 * The fake answers like a real Nextcloud 34, or 29 where asked (series.ts).
 */

import type { Series } from './series.js';
export type { Series } from './series.js';
export type { CollectionOptions } from './groupware/collections.js';
import type { CollectionOptions } from './groupware/collections.js';

/** Behaviour switches; mutable at runtime (`fake.faults.down = true`). */
export interface Faults {
  /** files_trashbin enabled: DELETE moves to the trashbin, capabilities say `undelete`. */
  trashbin: boolean;
  /** files_lock enabled: LOCK/UNLOCK work; off means 501 and no lock enforcement. */
  filesLock: boolean;
  /**
   * files_versions enabled: an overwrite keeps the replaced content as a version, and
   * capabilities say `versioning`; off, nothing is kept and `versions/` is 404.
   */
  versions: boolean;
  /** Destroy every socket (new connections and requests) without answering. */
  down: boolean;
  /** Delay in ms before any request is answered. */
  slowMs: number;
  /**
   * Delay in ms before a PROPFIND is answered (read after the delay), as a real server
   * takes its time over a folder with many subfolders: checks that read a tree are slow.
   */
  propfindDelayMs: number;
  /** Answer every request with this HTTP status (e.g. 500, 503, 507, 429). */
  status: number | null;
  /** Flip one byte of every GET body (the first byte sent, XOR 0xff). */
  flipByte: boolean;
  /**
   * How `X-Hash` is answered: `honest` (as Nextcloud 29 with local storage), `wrong` (a
   * hash of other bytes), `none` (no hash header at all, like an object-store MOVE).
   */
  xHash: 'honest' | 'wrong' | 'none';
  /** Put the request's Authorization header and the password into error bodies. */
  echoAuth: boolean;
  /**
   * The next N DELETEs of an upload folder answer 403 with an empty message and leave it,
   * as Nextcloud 29 does when the DELETE meets the cleanup of a cut chunk PUT (observed
   * on 29.0.5 for 7 of 310 DELETEs sent right after a cut; a repeat ~100 ms later
   * succeeds). The race itself is too narrow to recreate, so it is a switch.
   */
  uploadDeleteForbidden: number;
  /**
   * The user's quota in bytes (null: none). An upload that does not fit is answered 507
   * as Nextcloud 34 does (dav/quota.ts).
   */
  quotaBytes: number | null;
  /**
   * While set, every file or chunk PUT waits for it before it is handled (a test holds
   * uploads in flight to see what is decided meanwhile).
   */
  putGate: Promise<void> | null;
  /**
   * While set, every request of that method waits for `until` before it is handled (a
   * test makes something happen on the server before the request it races with).
   */
  gate: { readonly method: string; readonly until: Promise<unknown> } | null;
  /**
   * The largest request body a PUT may announce (null: none). A larger one is answered
   * 413 before its body is asked for, as Apache's LimitRequestBody or a proxy's body
   * limit (nginx client_max_body_size) does.
   */
  putBodyLimit: number | null;
  /** The Activity app enabled (its API answers); off, its routes are 404 as on a server without it. */
  activityApp: boolean;
  /** The groups `cloud/user` names for the user (`admin`: an administrator). */
  groups: string[];
}

export interface RecordedRequest {
  method: string;
  /** The raw request target as received (path and query, still percent-encoded). */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The status it was answered with, once the whole answer went out. */
  status?: number;
  /** The `X-Request-Id` the answer showed, if it showed one (request-id.ts). */
  requestId?: string;
}

export interface FakeNextcloudOptions {
  user?: string;
  password?: string;
  /** Folder holding the user's files (names in NFC). Default: a fresh temp folder. */
  root?: string;
  /**
   * Folder of the trash bin (`files/` and `info/`, see trash.ts). Default: a temp folder
   * removed on close. Given, it is kept, and what it holds is trash again on the next start.
   */
  trashDir?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * Scale of the login-failure delays (real server: 1 s, 1.2, 1.6, 2.4, 4, 7.4, 13.6, 26 s).
   * 0 (default) answers at once; 0.001 gives 1 ms, 1.2 ms, ….
   */
  authDelayScale?: number;
  /** The failed login from which every request gets 429 (default 12). */
  throttleAtFailure?: number;
  /** Clock in ms since epoch (lock times, trash deletion times). Default Date.now. */
  now?: () => number;
  /** The Nextcloud series to answer as (series.ts): 34 (default) or 29. */
  series?: Series;
  /** Added to every file id the fake shows (default 0); 2n ** 60n gives Snowflake-sized ids. */
  fileIdBase?: bigint;
}

export interface LockAsOptions {
  /** 'token' = RFC 4918 lock (blocks everyone without the token); 'user' = files_lock user lock. */
  type: 'token' | 'user';
  /** Lock owner user id; default the fake's user. A user lock by someone else blocks the user. */
  owner?: string;
  /** Timeout in seconds, 0 = infinite. */
  timeoutSeconds?: number;
}

export interface FakeNextcloud {
  /** Base URL of the instance, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  user: string;
  password: string;
  /** The folder that backs the user's files. */
  root: string;
  /** Every request received, in order, including ones answered by a fault. */
  requests: RecordedRequest[];
  faults: Faults;
  /**
   * Write a file (parents created) at a user-relative path like `a/b.txt`: a change made
   * outside the broker. What it replaces becomes a version. With `by`, the user's
   * Activity stream records it as that user's change (as when the sharer of a folder
   * changes a file in it); without, no activity is recorded.
   */
  writeFile(path: string, content: string | Buffer, opts?: { by?: string }): Promise<void>;
  /** Content of a user file, or undefined if missing or a folder. */
  readFile(path: string): Promise<Buffer | undefined>;
  exists(path: string): Promise<boolean>;
  /** Create a folder (and parents). */
  mkdir(path: string): Promise<void>;
  /** Ids of the chunked-upload folders that exist now (none once every upload ended). */
  uploadFolders(): string[];
  /** Original locations (canonical: NFC, no leading slash) of the items now in the trashbin. */
  trashed(): string[];
  /**
   * Every content the server keeps for the user, wherever: the files, the saved versions
   * (also those of trashed files, which come back with them), the trash bin's items.
   * For tests of "nothing is lost".
   */
  keptContents(): Promise<Buffer[]>;
  /**
   * The admin_audit log (admin-audit.ts) as its file holds it: JSON lines, a login per
   * authenticated request and a line per file action, under each request's id.
   */
  adminAudit(): string;
  /** Give the user a quota in bytes (as `occ user:setting USER files quota`), null for none. */
  setQuota(bytes: number | null): void;
  /**
   * Run what Nextcloud's background job does to the trash bin under space pressure (see
   * trash.ts `expireForSpace`); answers the original locations of the items it deleted.
   */
  runExpiry(): Promise<string[]>;
  /** Place a lock as if another client did; returns its token. Throws if the path is missing. */
  lockAs(path: string, opts: LockAsOptions): Promise<string>;
  /**
   * Make the folder or file at `path` (create it first) the root of a share this user
   * received from `owner` (default `bob`), read-write, as Nextcloud 29 shows one.
   */
  receiveShare(path: string, opts?: { owner?: string; ownerQuota?: number | null }): Promise<void>;
  /**
   * The sharer's space as the server knows it: their quota (as `occ user:setting <owner>
   * files quota`; null for none) and the bytes of theirs outside what they shared.
   */
  setSharerSpace(owner: string, space: { quota?: number | null; elsewhere?: number }): void;
  /**
   * Make a calendar (as `occ dav:create-calendar` does: components VEVENT and VTODO,
   * display name = the name), or with `sharedBy` one another user shares with this one.
   */
  createCalendar(name: string, opts?: CollectionOptions): void;
  /** Make an address book (as `occ dav:create-addressbook` does). */
  createAddressBook(name: string, opts?: CollectionOptions): void;
  /** Store an `.ics` or `.vcf` in a collection as a client's PUT would (no checks). */
  addObject(
    kind: 'calendar' | 'addressbook',
    collection: string,
    object: string,
    data: string,
  ): void;
  /** What a collection stores under `object`, if anything. */
  objectOf(
    kind: 'calendar' | 'addressbook',
    collection: string,
    object: string,
  ): string | undefined;
  /** Currently held lock on a path, if any. */
  lockOf(path: string): { type: 'token' | 'user'; owner: string; token: string } | undefined;
  /**
   * Back to the initial behaviour: default faults, no recorded requests, no login
   * failures (ends the 429 throttle), no locks, no quota. Files and trashbin stay.
   */
  reset(): void;
  close(): Promise<void>;
}
