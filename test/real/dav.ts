/**
 * Looking at the real server directly, as one of its users, the way the owner's own
 * clients (sync client, web UI) or another user would: WebDAV files and the trash bin,
 * with no broker in between. Tests set the scene and check results with it.
 */
import { send, headerOf, type RawResponse } from './http.js';
import type { Account } from './server.js';

const PROPS =
  '<?xml version="1.0" encoding="utf-8"?>' +
  '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>' +
  '<d:resourcetype/><d:getetag/><nc:lock/><oc:fileid/>' +
  '<nc:trashbin-filename/><nc:trashbin-original-location/>' +
  '</d:prop></d:propfind>';

const LOCKINFO =
  '<?xml version="1.0" encoding="utf-8"?><d:lockinfo xmlns:d="DAV:">' +
  '<d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype></d:lockinfo>';

export interface TrashItem {
  /** The item's name inside the trash bin (`<name>.d<time>`), as the server spells it. */
  item: string;
  /** Where it was, relative to the user's home. */
  original: string;
}

/** `a/b c` → `a/b%20c`: each component encoded, `/` kept. */
export function encodePath(path: string): string {
  return path
    .split('/')
    .filter((c) => c !== '')
    .map(encodeURIComponent)
    .join('/');
}

function tagText(xml: string, tag: string): string[] {
  const re = new RegExp(`<(?:[\\w-]+:)?${tag}\\b[^>]*>([^<]*)</(?:[\\w-]+:)?${tag}>`, 'g');
  return [...xml.matchAll(re)].map((m) => (m[1] ?? '').replace(/&amp;/g, '&'));
}

/** Responses of a multistatus, each as its raw XML. */
function responses(xml: string): string[] {
  return [...xml.matchAll(/<d:response>([\s\S]*?)<\/d:response>/g)].map((m) => m[1] ?? '');
}

export class Dav {
  constructor(
    readonly url: string,
    readonly account: Account,
  ) {}

  /** `/remote.php/dav/files/<user>/<path>`. */
  target(path: string): string {
    return `/remote.php/dav/files/${encodeURIComponent(this.account.user)}/${encodePath(path)}`;
  }

  request(
    method: string,
    target: string,
    headers: Record<string, string> = {},
    body?: string | Buffer,
  ): Promise<RawResponse> {
    return send(this.url, { method, target, headers, body, auth: this.account });
  }

  put(path: string, content: string | Buffer, headers: Record<string, string> = {}) {
    return this.request('PUT', this.target(path), headers, content);
  }

  del(path: string, headers: Record<string, string> = {}) {
    return this.request('DELETE', this.target(path), headers);
  }

  mkcol(path: string) {
    return this.request('MKCOL', this.target(path));
  }

  /** Writes a file, creating its parent folders first; throws unless the PUT succeeded. */
  async writeFile(path: string, content: string | Buffer): Promise<string> {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const res = await this.mkcol(parts.slice(0, i).join('/'));
      if (res.status !== 201 && res.status !== 405)
        throw new Error(`MKCOL ${parts.slice(0, i).join('/')}: ${res.status}`);
    }
    const res = await this.put(path, content);
    if (res.status !== 201 && res.status !== 204)
      throw new Error(`PUT ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    return headerOf(res, 'etag') ?? '';
  }

  async mkdirs(path: string): Promise<void> {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const res = await this.mkcol(parts.slice(0, i).join('/'));
      if (res.status !== 201 && res.status !== 405)
        throw new Error(`MKCOL ${parts.slice(0, i).join('/')}: ${res.status}`);
    }
  }

  /** Takes an RFC 4918 token lock of this client's own (as a sync client or office app would). */
  async tokenLock(path: string): Promise<void> {
    const res = await this.request(
      'LOCK',
      this.target(path),
      { Timeout: 'Second-600', 'Content-Type': 'application/xml; charset=utf-8' },
      LOCKINFO,
    );
    if (res.status !== 200) throw new Error(`LOCK ${path}: ${res.status}`);
  }

  /** The file's bytes as text, or undefined when it does not exist. */
  async read(path: string): Promise<string | undefined> {
    const res = await this.request('GET', this.target(path));
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
    return res.text;
  }

  async exists(path: string): Promise<boolean> {
    const res = await this.request('PROPFIND', this.target(path), { Depth: '0' }, PROPS);
    if (res.status === 404) return false;
    if (res.status !== 207) throw new Error(`PROPFIND ${path}: ${res.status}`);
    return true;
  }

  /** The current etag (quoted) of a file or folder. */
  async etag(path: string): Promise<string> {
    const res = await this.request('PROPFIND', this.target(path), { Depth: '0' }, PROPS);
    if (res.status !== 207) throw new Error(`PROPFIND ${path}: ${res.status}`);
    const etag = tagText(res.text, 'getetag')[0];
    if (etag === undefined) throw new Error(`PROPFIND ${path}: no etag`);
    return etag.replace(/&quot;/g, '"');
  }

  /** The file id (a string: from Nextcloud 33 on ids pass 2^53). */
  async fileId(path: string): Promise<string> {
    const res = await this.request('PROPFIND', this.target(path), { Depth: '0' }, PROPS);
    if (res.status !== 207) throw new Error(`PROPFIND ${path}: ${res.status}`);
    const id = tagText(res.text, 'fileid')[0];
    if (id === undefined) throw new Error(`PROPFIND ${path}: no fileid`);
    return id;
  }

  /**
   * Removes whatever lock holds the file through files_lock's OCS API, as the Files app's
   * "unlock" does (files_lock 31+ offers it for locks held by automated clients).
   */
  async forceUnlock(path: string): Promise<number> {
    const id = await this.fileId(path);
    const res = await this.request('DELETE', `/ocs/v2.php/apps/files_lock/lock/${id}`, {
      'OCS-APIRequest': 'true',
    });
    return res.status;
  }

  /** How many earlier versions of a file the versions app keeps (each upload over it adds one). */
  async versions(path: string): Promise<number> {
    const id = await this.fileId(path);
    const user = encodeURIComponent(this.account.user);
    const list = await this.request('PROPFIND', `/remote.php/dav/versions/${user}/versions/${id}`, {
      Depth: '1',
    });
    if (list.status !== 207) throw new Error(`PROPFIND versions of ${path}: ${list.status}`);
    // The first response is the collection itself.
    return responses(list.text).length - 1;
  }

  /** Whether files_lock reports a lock on the file (`nc:lock` = 1). */
  async locked(path: string): Promise<boolean> {
    const res = await this.request('PROPFIND', this.target(path), { Depth: '0' }, PROPS);
    if (res.status !== 207) throw new Error(`PROPFIND ${path}: ${res.status}`);
    return tagText(res.text, 'lock')[0] === '1';
  }

  /** Names in a folder (decoded, as the server stores them). */
  async list(path: string): Promise<string[]> {
    const target = `${this.target(path)}${path === '' ? '' : '/'}`;
    const res = await this.request('PROPFIND', target, { Depth: '1' }, PROPS);
    if (res.status !== 207) throw new Error(`PROPFIND ${path}: ${res.status}`);
    return responses(res.text)
      .map((r) => tagText(r, 'href')[0] ?? '')
      .filter((href) => href.replace(/\/$/, '') !== target.replace(/\/$/, ''))
      .map((href) => decodeURIComponent(href.replace(/\/$/, '').split('/').pop() ?? ''))
      .sort();
  }

  /** What the user's trash bin holds. */
  async trash(): Promise<TrashItem[]> {
    const base = `/remote.php/dav/trashbin/${encodeURIComponent(this.account.user)}/trash/`;
    const res = await this.request('PROPFIND', base, { Depth: '1' }, PROPS);
    if (res.status !== 207) throw new Error(`PROPFIND trash: ${res.status}`);
    return responses(res.text)
      .filter((r) => tagText(r, 'href')[0] !== base)
      .map((r) => ({
        item: decodeURIComponent(
          (tagText(r, 'href')[0] ?? '').replace(/\/$/, '').split('/').pop() ?? '',
        ),
        original: tagText(r, 'trashbin-original-location')[0] ?? '',
      }));
  }

  /**
   * Empties the home, the pending uploads and the trash bin over WebDAV, as the kit's reset
   * does first (a received share is unshared, an own item goes to the trash bin, which is
   * then emptied, versions with it). True when every request succeeded; false when one did
   * not (a lock held, say): the kit's reset, which also clears locks, is then needed.
   */
  async emptyHome(): Promise<boolean> {
    const user = encodeURIComponent(this.account.user);
    const children = async (collection: string): Promise<string[] | undefined> => {
      const res = await this.request('PROPFIND', collection, { Depth: '1' }, PROPS);
      // 405: a user who never uploaded in chunks has no uploads folder.
      if (res.status === 405 || res.status === 404) return [];
      if (res.status !== 207) return undefined;
      return responses(res.text)
        .map((r) => tagText(r, 'href')[0] ?? '')
        .filter((href) => href !== '' && href.replace(/\/$/, '') !== collection.replace(/\/$/, ''));
    };
    for (const collection of [
      `/remote.php/dav/files/${user}/`,
      `/remote.php/dav/uploads/${user}/`,
    ]) {
      const hrefs = await children(collection);
      if (hrefs === undefined) return false;
      for (const href of hrefs) {
        const res = await this.request('DELETE', href);
        if (res.status !== 204 && res.status !== 404) return false;
      }
    }
    const emptied = await this.request('DELETE', `/remote.php/dav/trashbin/${user}/trash`);
    return emptied.status >= 200 && emptied.status < 300;
  }

  /** Restores a trash bin item under `name` at its original folder; returns the status. */
  async restore(item: string, name: string): Promise<number> {
    const user = encodeURIComponent(this.account.user);
    const res = await this.request(
      'MOVE',
      `/remote.php/dav/trashbin/${user}/trash/${encodeURIComponent(item)}`,
      {
        Destination: `${this.url}/remote.php/dav/trashbin/${user}/restore/${encodeURIComponent(name)}`,
      },
    );
    return res.status;
  }
}
