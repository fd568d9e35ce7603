/**
 * A differential case: a named sequence of requests, run from an empty home on one
 * server, each answer reduced to what the broker reads (observe.ts).
 *
 * In a step's target, header values and (text) body:
 *   `~/`          at the start of the target: the user's files, `/remote.php/dav/files/<user>/`
 *   `~cal/`       at the start: the user's calendar home, `/remote.php/dav/calendars/<user>/`
 *   `~card/`      at the start: the address book home, `/remote.php/dav/addressbooks/users/<user>/`
 *   `{user}`      the user name, encoded
 *   `{files}`     the absolute URL of the user's files (for Destination headers)
 *   `{trash}`     the absolute URL of the user's trash bin root
 *   `{base}`      the server's base URL
 *   `{lock:X}`    the lock token step `lock: 'X'` received
 *   `{etag:X}`    the etag step `etag: 'X'` received
 *   `{fileid:X}`  the numeric file id (from OC-FileId) step `fileid: 'X'` received
 *   `{item:X}`    the name (in the trash bin) of the item whose original path is X
 *   `{activity:X}` the activity id (X-Activity-Last-Given) step `activity: 'X'` received
 *   `{calitem:U}` the name (`<n>.ics`) of the calendar trash bin item holding the event of UID U
 */
import { nextSecond } from '../../../fakes/nextcloud.js';
import { CALENDAR_TRASH_QUERY } from '../../../broker/nextcloud/calendar-trash.js';
import { send, headerOf, type RawResponse } from '../http.js';
import type { Account } from '../server.js';
import { Labels, lockTokenOf, observe, type Observation, type Reading } from './observe.js';

export interface Step {
  /** Names the request in a failure. */
  name: string;
  method: string;
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Credentials: the user's (default), none, or a wrong app password. */
  auth?: 'user' | 'none' | 'wrong';
  read?: Reading;
  /** Keep the answer's lock token under this name. */
  lock?: string;
  /** Keep the answer's ETag (header, else the first getetag of its body) under this name. */
  etag?: string;
  /** Keep the numeric file id of the answer's OC-FileId (else its first oc:fileid) under this name. */
  fileid?: string;
  /** Keep the answer's X-Activity-Last-Given (the last activity row it read) under this name. */
  activity?: string;
}

/**
 * Wait until the wall clock starts a new second. Nextcloud keeps a file's etag when it
 * is overwritten within the second of its last write (fake.ts's store does the same), so
 * an overwrite that must change the etag comes right after a pause. (What happens
 * within one second is observed with writes that set their mtime, `X-OC-Mtime`, never
 * by racing the clock.)
 */
export const NEXT_SECOND = { pause: 'next second' } as const;

export interface Case {
  name: string;
  steps: readonly (Step | typeof NEXT_SECOND)[];
  /** Run with the files_lock app disabled. */
  filesLockOff?: boolean;
  /**
   * Folders the second user creates (each with `inner.txt`) and shares read-write with
   * the user before the steps run: received shares at the user's root.
   */
  received?: readonly string[];
  /**
   * Calendars and address books made (as `occ dav:create-calendar` / `create-addressbook`
   * do) before the steps run, and removed after them: the kit's reset keeps them.
   */
  calendars?: readonly string[];
  addressbooks?: readonly string[];
  /**
   * The user's quota while the steps run: `occ user:setting <user> files quota <occ>` on
   * the real server (set back to none after), `faults.quotaBytes = bytes` on the fake.
   */
  quota?: { occ: string; bytes: number };
  /**
   * The second user's quota (whose folders `received` are), set before they share:
   * `occ user:setting <other> files quota <occ>` on the real server (none after), the
   * sharer's quota on the fake.
   */
  sharerQuota?: { occ: string; bytes: number };
}

/** What the second user puts in each folder it shares (`Case.received`). */
export const RECEIVED_FILE = { name: 'inner.txt', content: 'from the other user' } as const;

export interface Server {
  url: string;
  account: Account;
}

export interface Observed {
  step: string;
  observation: Observation;
}

const TRASH_LIST =
  '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:nc="http://nextcloud.org/ns">' +
  '<d:prop><nc:trashbin-original-location/></d:prop></d:propfind>';

class Vars {
  readonly locks = new Map<string, string>();
  readonly etags = new Map<string, string>();
  readonly fileids = new Map<string, string>();
  readonly activities = new Map<string, string>();

  readonly #server: Server;

  constructor(server: Server) {
    this.#server = server;
  }

  get user(): string {
    return encodeURIComponent(this.#server.account.user);
  }

  /** Trash bin item names by original location (the server names items `<name>.d<time>`). */
  async trashItems(): Promise<Map<string, string>> {
    const res = await send(this.#server.url, {
      method: 'PROPFIND',
      target: `/remote.php/dav/trashbin/${this.user}/trash/`,
      headers: { Depth: '1' },
      body: TRASH_LIST,
      auth: this.#server.account,
    });
    const items = new Map<string, string>();
    for (const m of res.text.matchAll(/<d:response>([\s\S]*?)<\/d:response>/g)) {
      const href = /<d:href>([^<]*)<\/d:href>/.exec(m[1] ?? '')?.[1] ?? '';
      const original = /<nc:trashbin-original-location>([^<]*)</.exec(m[1] ?? '')?.[1];
      const name = href.replace(/\/$/, '').split('/').pop();
      if (original !== undefined && name !== undefined) items.set(original, name);
    }
    return items;
  }

  /** Calendar trash bin item names (`<n>.ics`) by the UID of the event they hold. */
  async calendarTrashItems(): Promise<Map<string, string>> {
    const res = await send(this.#server.url, {
      method: 'REPORT',
      target: `/remote.php/dav/calendars/${this.user}/trashbin/objects/`,
      headers: { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
      body: CALENDAR_TRASH_QUERY,
      auth: this.#server.account,
    });
    const items = new Map<string, string>();
    for (const m of res.text.matchAll(/<d:response>([\s\S]*?)<\/d:response>/g)) {
      const name = /\/trashbin\/objects\/([^<]+)<\/d:href>/.exec(m[1] ?? '')?.[1];
      const uid = /UID:([^\r\n<]+)/.exec(m[1] ?? '')?.[1];
      if (name !== undefined && uid !== undefined) items.set(uid, name);
    }
    return items;
  }

  async fill(value: string): Promise<string> {
    let out = value
      .replace(/^~\//, `/remote.php/dav/files/${this.user}/`)
      .replace(/^~cal\//, `/remote.php/dav/calendars/${this.user}/`)
      .replace(/^~card\//, `/remote.php/dav/addressbooks/users/${this.user}/`)
      .replace(/\{user\}/g, this.user)
      .replace(/\{files\}/g, `${this.#server.url}/remote.php/dav/files/${this.user}`)
      .replace(/\{trash\}/g, `${this.#server.url}/remote.php/dav/trashbin/${this.user}`)
      .replace(/\{base\}/g, this.#server.url)
      .replace(/\{lock:(\w+)\}/g, (_, k: string) => this.need(this.locks, 'lock', k))
      .replace(/\{etag:(\w+)\}/g, (_, k: string) => this.need(this.etags, 'etag', k))
      .replace(/\{fileid:(\w+)\}/g, (_, k: string) => this.need(this.fileids, 'file id', k))
      .replace(/\{activity:(\w+)\}/g, (_, k: string) => this.need(this.activities, 'activity', k));
    if (/\{calitem:/.test(out)) {
      const items = await this.calendarTrashItems();
      out = out.replace(/\{calitem:([^}]+)\}/g, (_, uid: string) =>
        this.need(items, 'calendar trash item with UID', uid),
      );
    }
    if (/\{item:/.test(out)) {
      const items = await this.trashItems();
      out = out.replace(/\{item:([^}]+)\}/g, (_, original: string) =>
        encodeURIComponent(this.need(items, 'trash item', original)),
      );
    }
    return out;
  }

  need(map: Map<string, string>, what: string, key: string): string {
    const v = map.get(key);
    if (v === undefined) throw new Error(`no ${what} named ${key} was received`);
    return v;
  }
}

async function sendStep(
  server: Server,
  vars: Vars,
  step: Step,
): Promise<{ res: RawResponse; target: string }> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(step.headers ?? {})) headers[k] = await vars.fill(v);
  const target = await vars.fill(step.target);
  const body = typeof step.body === 'string' ? await vars.fill(step.body) : step.body;
  const auth =
    step.auth === 'none'
      ? undefined
      : step.auth === 'wrong'
        ? { user: server.account.user, password: 'not-the-app-password-0123456789' }
        : server.account;
  const res = await send(server.url, {
    method: step.method,
    target,
    headers,
    ...(body === undefined ? {} : { body }),
    auth,
  });
  return { res, target };
}

/** The requests of a case (without its pauses). */
export function requestsOf(c: Case): Step[] {
  return c.steps.filter((s): s is Step => !('pause' in s));
}

/** Runs every step in order on one server and returns what the broker would read of each. */
export async function runCase(server: Server, c: Case): Promise<Observed[]> {
  const vars = new Vars(server);
  const labels = new Labels();
  const out: Observed[] = [];
  for (const step of c.steps) {
    if ('pause' in step) {
      await nextSecond();
      continue;
    }
    const { res, target } = await sendStep(server, vars, step);
    if (step.lock !== undefined) {
      const token = lockTokenOf(res);
      if (token !== undefined) vars.locks.set(step.lock, token);
    }
    if (step.etag !== undefined) {
      const etag =
        headerOf(res, 'etag') ??
        /<d:getetag>([^<]*)<\/d:getetag>/.exec(res.text)?.[1]?.replace(/&quot;/g, '"');
      if (etag !== undefined) vars.etags.set(step.etag, etag);
    }
    const lastGiven = headerOf(res, 'x-activity-last-given');
    if (step.activity !== undefined && lastGiven !== undefined)
      vars.activities.set(step.activity, lastGiven);
    if (step.fileid !== undefined) {
      const id =
        /^(\d+)oc/.exec(headerOf(res, 'oc-fileid') ?? '')?.[1] ??
        /<oc:fileid>(\d+)<\/oc:fileid>/.exec(res.text)?.[1];
      if (id !== undefined) vars.fileids.set(step.fileid, String(Number(id)));
    }
    out.push({ step: step.name, observation: observe(res, labels, target, step.read) });
  }
  return out;
}

/** One line per step whose observations differ, naming the step and each differing field. */
export function differences(fake: readonly Observed[], real: readonly Observed[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < Math.max(fake.length, real.length); i++) {
    const f = fake[i]?.observation ?? {};
    const r = real[i]?.observation ?? {};
    const keys = [...new Set([...Object.keys(f), ...Object.keys(r)])];
    const differing = keys.filter((k) => JSON.stringify(f[k]) !== JSON.stringify(r[k]));
    if (differing.length === 0) continue;
    const show = (o: Observation) =>
      differing.map((k) => `${k}=${JSON.stringify(o[k]) ?? 'absent'}`).join(' ');
    lines.push(
      `${i + 1}. ${fake[i]?.step ?? real[i]?.step ?? '?'}\n     fake: ${show(f)}\n     real: ${show(r)}`,
    );
  }
  return lines;
}
