/**
 * The request sequences the fake and the real server must answer alike: every request
 * shape the broker's Nextcloud client (and its doctor) sends, with the exact headers and
 * bodies it sends them with, plus the odd answers of Nextcloud the broker relies on or
 * defends against (names, encodings, locks, the trash bin, same-second etags). Each
 * case starts from empty homes. Second-wave request shapes join as they land.
 */
import { INSPECT_BODY } from '../../../broker/nextcloud/inspect.js';
import { LOCK_BODY } from '../../../broker/nextcloud/locks.js';
import { PROPFIND_BODY } from '../../../broker/nextcloud/multistatus.js';
import { searchBody } from '../../../broker/nextcloud/search-query.js';
import { GROUPWARE_CASES } from './groupware-cases.js';
import { QUOTA_CASES } from './quota-cases.js';
import { RECORDS_CASES } from './records-cases.js';
import { SPACE_CASES } from './space-cases.js';
import { NEXT_SECOND, type Case, type Step } from './steps.js';

const XML = 'application/xml; charset=utf-8';

// ---- the broker's request shapes ---------------------------------------------------

/** NextcloudClient.list (Depth 1) and stat (Depth 0). */
const propfind = (name: string, target: string, depth: '0' | '1' | 'infinity' = '1'): Step => ({
  name,
  method: 'PROPFIND',
  target,
  headers: { 'Content-Type': XML, Depth: depth },
  body: PROPFIND_BODY,
});

/** NextcloudClient.inspect (Depth 0) and the trash check's walk (Depth 1): lock and mount props. */
const inspect = (name: string, target: string, depth: '0' | '1' = '0'): Step => ({
  name,
  method: 'PROPFIND',
  target,
  headers: { 'Content-Type': XML, Depth: depth },
  body: INSPECT_BODY,
});

/** The owner's OCS unlock (the web UI's), which also breaks a checkout's token lock. */
const ocsUnlock = (name: string, fileid: string): Step => ({
  name,
  method: 'DELETE',
  target: `/ocs/v2.php/apps/files_lock/lock/{fileid:${fileid}}?format=json`,
  headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
});

/** NextcloudClient.readStream: one GET, optionally If-None-Match or a Range. */
const get = (name: string, target: string, headers: Record<string, string> = {}): Step => ({
  name,
  method: 'GET',
  target,
  headers,
  read: { content: true },
});

/** A GET's headers that say "this is a file": compared verbatim besides the etags. */
const FILE_HEAD = { content: true, headers: ['content-disposition', 'content-type'] } as const;

/** Names whose GET content type the fake must name as Nextcloud does (observed on 29.0.5). */
const CONTENT_TYPE_NAMES = [
  'a.txt',
  'b.md',
  'c.csv',
  'd.json',
  'e.xml',
  'f.yaml',
  'g.yml',
  'h.js',
  'i.mjs',
  'j.ts',
  'k.sh',
  'l.htm',
  'm.svg',
  'n.png',
  'o.pdf',
  'p.bin',
  'q.tar.gz',
  'r.zip',
  's.mp4',
  't.log',
  'noext',
];

/** NextcloudClient.writeStream: always one condition, octet-stream, Expect: 100-continue. */
const put = (
  name: string,
  target: string,
  body: string,
  headers: Record<string, string>,
  extra: Partial<Step> = {},
): Step => ({
  name,
  method: 'PUT',
  target,
  headers: { 'Content-Type': 'application/octet-stream', Expect: '100-continue', ...headers },
  body,
  ...extra,
});
/** A write's mtime, `seconds` after a fixed moment (Nextcloud answers `X-OC-MTime: accepted`). */
const mtime = (seconds: number): Record<string, string> => ({
  'X-OC-Mtime': String(1_700_000_000 + seconds),
});
const create = (name: string, target: string, body: string, extra: Partial<Step> = {}): Step =>
  put(name, target, body, { 'If-None-Match': '*' }, extra);

/** A PUT asking Nextcloud to hash what it stored. */
const hashed = (
  name: string,
  target: string,
  body: string,
  algorithm: string,
  headers: Record<string, string> = {},
): Step =>
  put(
    name,
    target,
    body,
    { ...headers, 'X-Hash': algorithm },
    {
      read: { headers: ['x-hash-sha256', 'x-hash-md5', 'x-hash-sha1'] },
    },
  );

const mkcol = (name: string, target: string): Step => ({ name, method: 'MKCOL', target });

// ---- chunked upload v2 (NextcloudClient.upload: replacements and big new files) ----

const UPLOADS = '/remote.php/dav/uploads/{user}';
const HASH_HEADERS = { read: { headers: ['x-hash-sha256'] } } as const;

/** The MKCOL of an upload folder, naming its destination. */
const uploadFolder = (name: string, id: string, destination: string): Step => ({
  name,
  method: 'MKCOL',
  target: `${UPLOADS}/${id}`,
  headers: { Destination: destination },
});

/** A chunk PUT as the broker sends it. */
const chunk = (
  name: string,
  id: string,
  n: string,
  body: string,
  destination: string,
  total: number,
): Step => ({
  name,
  method: 'PUT',
  target: `${UPLOADS}/${id}/${n}`,
  headers: {
    'Content-Type': 'application/octet-stream',
    Destination: destination,
    'OC-Total-Length': String(total),
    'X-Hash': 'sha256',
  },
  body,
  ...HASH_HEADERS,
});

/** The final MOVE of `.file`, with the destination's condition in `headers`. */
const commit = (
  name: string,
  id: string,
  destination: string,
  total: number,
  headers: Record<string, string>,
): Step => ({
  name,
  method: 'MOVE',
  target: `${UPLOADS}/${id}/.file`,
  headers: {
    Destination: destination,
    'OC-Total-Length': String(total),
    'X-Hash': 'sha256',
    ...headers,
  },
  ...HASH_HEADERS,
});

/** DELETE of an upload folder: 204 while it is kept, 404 once it is gone. */
const dropFolder = (name: string, id: string): Step => ({
  name,
  method: 'DELETE',
  target: `${UPLOADS}/${id}`,
});

/** NextcloudClient.move: never overwrites. */
const move = (name: string, from: string, to: string, overwrite: 'F' | undefined = 'F'): Step => ({
  name,
  method: 'MOVE',
  target: from,
  headers: { Destination: to, ...(overwrite === undefined ? {} : { Overwrite: overwrite }) },
});

const del = (name: string, target: string, headers: Record<string, string> = {}): Step => ({
  name,
  method: 'DELETE',
  target,
  headers,
});

/** NextcloudClient.lock: an RFC 4918 exclusive write lock, Depth 0, a timeout. */
const lock = (name: string, target: string, as: string, headers: Record<string, string> = {}) =>
  ({
    name,
    method: 'LOCK',
    target,
    headers: { 'Content-Type': XML, Depth: '0', Timeout: 'Second-600', ...headers },
    body: LOCK_BODY,
    lock: as,
  }) satisfies Step;

const unlock = (name: string, target: string, token: string | undefined): Step => ({
  name,
  method: 'UNLOCK',
  target,
  headers: token === undefined ? {} : { 'Lock-Token': `<${token}>` },
});

/** NextcloudClient capabilities (also the doctor's). */
const capabilities = (name: string, auth: Step['auth'] = 'user'): Step => ({
  name,
  method: 'GET',
  target: '/ocs/v2.php/cloud/capabilities?format=json',
  headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
  auth,
});

/**
 * NextcloudClient.search: one SEARCH on the DAV root, the folder's own file id (kept by
 * an earlier step under `folder`) left out, one result more than a page asked for.
 */
const search = (
  name: string,
  path: string,
  term: string,
  folder: string,
  page: { limit?: number; offset?: number } = {},
): Step => ({
  name,
  method: 'SEARCH',
  target: '/remote.php/dav/',
  headers: { 'Content-Type': XML },
  body: searchBody({
    scope: path === '' ? '/files/{user}' : `/files/{user}/${path}`,
    term,
    folderId: '0',
    limit: page.limit ?? 101,
    offset: page.offset ?? 0,
  }).replace(
    '<oc:fileid/></d:prop><d:literal>0</d:literal>',
    `<oc:fileid/></d:prop><d:literal>{fileid:${folder}}</d:literal>`,
  ),
  read: { ordered: true },
});

/** A SEARCH the broker does not send, to pin down how the server reads one. */
const rawSearch = (
  name: string,
  scope: string,
  where: string,
  opts: { limit?: number; target?: string; unordered?: boolean } = {},
): Step => ({
  name,
  method: 'SEARCH',
  target: opts.target ?? '/remote.php/dav/',
  headers: { 'Content-Type': XML },
  body:
    '<?xml version="1.0" encoding="utf-8"?><d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">' +
    '<d:basicsearch><d:select><d:prop><d:resourcetype/><d:getcontentlength/></d:prop></d:select>' +
    `<d:from><d:scope><d:href>${scope}</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
    `<d:where>${where}</d:where>` +
    (opts.unordered === true
      ? ''
      : '<d:orderby><d:order><d:prop><d:displayname/></d:prop><d:ascending/></d:order></d:orderby>') +
    (opts.limit === undefined ? '' : `<d:limit><d:nresults>${opts.limit}</d:nresults></d:limit>`) +
    '</d:basicsearch></d:searchrequest>',
  read: { ordered: true },
});
const like = (literal: string) =>
  `<d:like><d:prop><d:displayname/></d:prop><d:literal>${literal}</d:literal></d:like>`;

const TRASH_PROPFIND =
  '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">' +
  '<d:prop><d:resourcetype/><d:getcontentlength/><nc:trashbin-filename/><nc:trashbin-original-location/></d:prop></d:propfind>';

/** What the owner sees in the trash bin. */
const trashList = (name: string): Step => ({
  name,
  method: 'PROPFIND',
  target: '/remote.php/dav/trashbin/{user}/trash/',
  headers: { 'Content-Type': XML, Depth: '1' },
  body: TRASH_PROPFIND,
});

// ---- the cases -----------------------------------------------------------------------

const NFC = 'R\u00e9sum\u00e9';
const NFD = NFC.normalize('NFD');
const enc = encodeURIComponent;
const LONG_OK = 'n'.repeat(220);
const LONG_PUT_FAILS = 'p'.repeat(230);
const LONG_REFUSED = 'r'.repeat(251);

export const CASES: readonly Case[] = [
  {
    name: 'listing and stat (PROPFIND Depth 0 and 1)',
    steps: [
      mkcol('MKCOL a new folder', '~/T'),
      create('PUT a new file', '~/T/a.txt', 'hello'),
      mkcol('MKCOL a subfolder', '~/T/sub'),
      propfind('PROPFIND Depth 1 of the home', '~/'),
      propfind('PROPFIND Depth 1 of a folder', '~/T'),
      propfind('PROPFIND Depth 1 of a folder with a trailing slash', '~/T/'),
      propfind('PROPFIND Depth 0 of a file', '~/T/a.txt', '0'),
      propfind('PROPFIND Depth 0 of a folder', '~/T', '0'),
      propfind('PROPFIND Depth 1 of a file', '~/T/a.txt'),
      propfind('PROPFIND Depth 0 of a missing path', '~/T/missing.txt', '0'),
      propfind('PROPFIND Depth 1 of a missing folder', '~/Missing'),
      propfind('PROPFIND Depth infinity (honoured)', '~/', 'infinity'),
      {
        name: "PROPFIND Depth 0 of the home (the doctor's credentials check)",
        method: 'PROPFIND',
        target: '~/',
        headers: { Depth: '0', 'Content-Type': XML },
        body: '<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/></d:prop></d:propfind>',
      },
    ],
  },
  {
    name: 'reading (GET with If-Match, Range, If-None-Match)',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'hello world', { etag: 'a' }),
      get('GET with If-Match the current etag', '~/T/a.txt', { 'If-Match': '{etag:a}' }),
      get('GET a range', '~/T/a.txt', { 'If-Match': '{etag:a}', Range: 'bytes=0-4' }),
      get('GET an open-ended range', '~/T/a.txt', { 'If-Match': '{etag:a}', Range: 'bytes=6-' }),
      get('GET a range past the end', '~/T/a.txt', { Range: 'bytes=100-200' }),
      get('GET with If-None-Match the current etag', '~/T/a.txt', { 'If-None-Match': '{etag:a}' }),
      get('GET with a stale If-Match', '~/T/a.txt', { 'If-Match': '"0123456789abc"' }),
      get('GET of a folder', '~/T'),
      get('GET of a missing file', '~/T/missing.txt'),
      put('PUT an empty file', '~/T/empty.txt', '', { 'If-None-Match': '*' }),
      get('GET of an empty file', '~/T/empty.txt'),
    ],
  },
  {
    // The type a GET names: Nextcloud's by the last extension, text/plain for the kinds
    // a browser would run or render, and a charset on every text type.
    name: 'content types of a GET, by name',
    steps: [
      mkcol('MKCOL', '~/T'),
      ...CONTENT_TYPE_NAMES.flatMap((name) => [
        create(`PUT ${name}`, `~/T/${name}`, 'x'),
        { ...get(`GET ${name}`, `~/T/${name}`), read: FILE_HEAD },
      ]),
    ],
  },
  {
    // The blob GET is one request: the answer alone must say file, folder, missing or
    // unchanged (see broker/nextcloud/transfers.ts).
    name: 'a download in one GET (ETag only for a file; If-None-Match)',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.html', '<p>hi</p>', { etag: 'a' }),
      { ...get('GET a file', '~/T/a.html'), read: FILE_HEAD },
      { ...get('GET a folder', '~/T'), read: FILE_HEAD },
      { ...get('GET a folder with a trailing slash', '~/T/'), read: FILE_HEAD },
      { ...get('GET the root', '~/'), read: FILE_HEAD },
      get('GET a missing path', '~/T/none.html'),
      get('GET If-None-Match the current etag', '~/T/a.html', { 'If-None-Match': '{etag:a}' }),
      get('GET If-None-Match a list holding it', '~/T/a.html', {
        'If-None-Match': '"x", {etag:a}',
      }),
      get('GET If-None-Match the etag weak', '~/T/a.html', { 'If-None-Match': 'W/{etag:a}' }),
      get('GET If-None-Match another etag', '~/T/a.html', { 'If-None-Match': '"0123456789abc"' }),
      get('GET If-None-Match *', '~/T/a.html', { 'If-None-Match': '*' }),
      get('GET a range If-None-Match the etag', '~/T/a.html', {
        'If-None-Match': '{etag:a}',
        Range: 'bytes=0-1',
      }),
      get('GET a range', '~/T/a.html', { Range: 'bytes=0-1' }),
      get('GET a missing path If-None-Match', '~/T/none.html', { 'If-None-Match': '{etag:a}' }),
      get('GET a folder If-None-Match another etag', '~/T', { 'If-None-Match': '"x"' }),
      get('GET a folder If-None-Match *', '~/T', { 'If-None-Match': '*' }),
      { ...propfind('PROPFIND the folder (its etag)', '~/T', '0'), etag: 'T' },
      get('GET a folder If-None-Match its own etag', '~/T', { 'If-None-Match': '{etag:T}' }),
      NEXT_SECOND,
      put('PUT a change', '~/T/a.html', '<p>ho</p>', { 'If-Match': '{etag:a}' }),
      get('GET If-None-Match the old etag after the change', '~/T/a.html', {
        'If-None-Match': '{etag:a}',
      }),
    ],
  },
  {
    name: 'writing never clobbers (If-None-Match, If-Match)',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT create-only a new file', '~/T/a.txt', 'one', { etag: 'one' }),
      create('PUT create-only onto an existing file', '~/T/a.txt', 'two'),
      NEXT_SECOND,
      put(
        'PUT If-Match the current etag',
        '~/T/a.txt',
        'three',
        { 'If-Match': '{etag:one}' },
        { etag: 'three' },
      ),
      put('PUT If-Match a stale etag', '~/T/a.txt', 'four', { 'If-Match': '{etag:one}' }),
      get('GET after the refused writes', '~/T/a.txt'),
      put('PUT If-Match on a missing file', '~/T/missing.txt', 'x', { 'If-Match': '{etag:three}' }),
      create('PUT into a missing folder', '~/T/nope/b.txt', 'x'),
      create('PUT create-only onto a folder', '~/T', 'x'),
      put('PUT If-Match onto a folder', '~/T', 'x', { 'If-Match': '{etag:three}' }),
      NEXT_SECOND,
      put('PUT with no condition (the owner\u2019s own client)', '~/T/a.txt', 'five', {}),
      get('GET after the unconditional write', '~/T/a.txt'),
    ],
  },
  {
    // Each write sets its mtime (X-OC-Mtime), so "the same second" is the same mtime
    // whatever the clock does: local storage's etag is a hash of mtime and size.
    name: 'an overwrite within the same second keeps the etag (mtimes set)',
    steps: [
      mkcol('MKCOL', '~/T'),
      put(
        'PUT a new file',
        '~/T/a.txt',
        'one',
        { 'If-None-Match': '*', ...mtime(0) },
        {
          etag: 'one',
        },
      ),
      put('PUT If-Match, the same mtime and size', '~/T/a.txt', 'two', {
        'If-Match': '{etag:one}',
        ...mtime(0),
      }),
      put(
        'PUT If-Match the first etag, the same mtime, another size',
        '~/T/a.txt',
        'three',
        { 'If-Match': '{etag:one}', ...mtime(0) },
        { etag: 'three' },
      ),
      get('GET after the same-mtime writes', '~/T/a.txt'),
      put('PUT If-Match the first etag again', '~/T/a.txt', 'four', {
        'If-Match': '{etag:one}',
        ...mtime(0),
      }),
      put('PUT back to the first size: the first etag again', '~/T/a.txt', 'six', {
        'If-Match': '{etag:three}',
        ...mtime(0),
      }),
      put('PUT If-Match the first etag, a later mtime', '~/T/a.txt', 'seven', {
        'If-Match': '{etag:one}',
        ...mtime(1),
      }),
      put('PUT If-Match the first etag after that', '~/T/a.txt', 'eight', {
        'If-Match': '{etag:one}',
      }),
      get('GET at the end', '~/T/a.txt'),
    ],
  },
  {
    name: 'folders (MKCOL)',
    steps: [
      mkcol('MKCOL a new folder', '~/T'),
      mkcol('MKCOL an existing folder', '~/T'),
      mkcol('MKCOL in a missing folder', '~/Missing/T'),
      create('PUT a file', '~/T/a.txt', 'x'),
      mkcol('MKCOL over an existing file', '~/T/a.txt'),
      mkcol('MKCOL under a file', '~/T/a.txt/sub'),
      propfind('PROPFIND the folders', '~/T'),
    ],
  },
  {
    name: 'moving (MOVE with Overwrite: F)',
    steps: [
      mkcol('MKCOL', '~/T'),
      mkcol('MKCOL a subfolder', '~/T/d'),
      create('PUT a', '~/T/a.txt', 'a'),
      create('PUT b', '~/T/b.txt', 'b'),
      move('MOVE to a free name', '~/T/a.txt', '{files}/T/c.txt'),
      move('MOVE onto an existing file', '~/T/c.txt', '{files}/T/b.txt'),
      move('MOVE into a missing folder', '~/T/c.txt', '{files}/T/missing/c.txt'),
      move('MOVE a folder into its own subtree', '~/T/d', '{files}/T/d/e'),
      move('MOVE a file into a folder', '~/T/b.txt', '{files}/T/d/b.txt'),
      move('MOVE a folder to a new name', '~/T/d', '{files}/T/e'),
      move('MOVE a missing source', '~/T/missing.txt', '{files}/T/f.txt'),
      propfind('PROPFIND after the moves', '~/T'),
      propfind('PROPFIND the moved folder', '~/T/e'),
      move(
        'MOVE without Overwrite onto an existing file',
        '~/T/c.txt',
        '{files}/T/e/b.txt',
        undefined,
      ),
      get('GET the overwritten target', '~/T/e/b.txt'),
      trashList('the trash bin holds the overwritten target'),
    ],
  },
  {
    name: 'deleting into the trash bin, and restoring',
    steps: [
      mkcol('MKCOL', '~/T'),
      mkcol('MKCOL a subfolder', '~/T/d'),
      create('PUT a file', '~/T/a.txt', 'keep me'),
      create('PUT a file in the subfolder', '~/T/d/x.txt', 'x'),
      del('DELETE a file', '~/T/a.txt'),
      del('DELETE it again', '~/T/a.txt'),
      del('DELETE a folder', '~/T/d'),
      del('DELETE a missing path', '~/T/missing'),
      trashList('the trash bin lists both'),
      {
        name: 'MOVE a trash bin item to restore/',
        method: 'MOVE',
        target: '/remote.php/dav/trashbin/{user}/trash/{item:T/a.txt}',
        headers: { Destination: '{trash}/restore/a.txt' },
      },
      get('GET the restored file', '~/T/a.txt'),
      trashList('the trash bin after the restore'),
      del('DELETE the home folder', '~/'),
    ],
  },
  {
    name: 'Unicode names (NFC stored, NFD requests)',
    steps: [
      mkcol('MKCOL an NFC folder', `~/${enc(NFC)}`),
      create('PUT an NFC file', `~/${enc(NFC)}/${enc(NFC)}.txt`, 'nfc', { etag: 'nfc' }),
      get('GET in NFD', `~/${enc(NFD)}/${enc(NFD)}.txt`),
      propfind('PROPFIND Depth 1 in NFD', `~/${enc(NFD)}`),
      propfind('PROPFIND Depth 1 in NFC', `~/${enc(NFC)}`),
      propfind('PROPFIND Depth 0 in NFD', `~/${enc(NFD)}/${enc(NFD)}.txt`, '0'),
      NEXT_SECOND,
      put('PUT If-Match in NFD (overwrites the NFC file)', `~/${enc(NFD)}/${enc(NFD)}.txt`, 'nfd', {
        'If-Match': '{etag:nfc}',
      }),
      create('PUT create-only in NFD onto the NFC file', `~/${enc(NFD)}/${enc(NFD)}.txt`, 'x'),
      get('GET in NFC after the NFD write', `~/${enc(NFC)}/${enc(NFC)}.txt`),
      move(
        'MOVE between the NFC and NFD spellings of one name',
        `~/${enc(NFC)}/${enc(NFC)}.txt`,
        `{files}/${enc(NFC)}/${enc(NFD)}.txt`,
      ),
      propfind('PROPFIND after the NFC/NFD move', `~/${enc(NFC)}`),
      move(
        'MOVE between the NFC and NFD spellings without Overwrite',
        `~/${enc(NFC)}/${enc(NFC)}.txt`,
        `{files}/${enc(NFC)}/${enc(NFD)}.txt`,
        undefined,
      ),
      propfind('PROPFIND after the NFC/NFD move without Overwrite', `~/${enc(NFC)}`),
      trashList('the trash bin after the NFC/NFD moves'),
    ],
  },
  {
    name: 'odd names and encodings',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a name with + and :', `~/T/${enc('a+b:c.txt')}`, 'x'),
      create('PUT a name with : unencoded', '~/T/d:e.txt', 'x'),
      create('PUT a name with a space and brackets', `~/T/${enc('f (1) [2].txt')}`, 'x'),
      create('PUT %FF', '~/T/%FF.txt', 'x'),
      create('PUT a trailing space', `~/T/${enc('g ')}`, 'x'),
      create('PUT a trailing dot', '~/T/h.', 'x'),
      create('PUT a Windows-reserved name', '~/T/CON', 'x'),
      propfind('PROPFIND the odd names', '~/T'),
      create('PUT %2F inside a name', '~/T/a%2Fb.txt', 'x'),
      create('PUT %5C inside a name', '~/T/a%5Cb.txt', 'x'),
      create('PUT a newline inside a name', '~/T/a%0Ab.txt', 'x'),
      create('PUT a control character inside a name', '~/T/a%01b.txt', 'x'),
      get('GET through %2E%2E', '~/T/%2E%2E/T/d:e.txt'),
      get('GET through a literal ..', '~/T/../T/d:e.txt'),
      create('PUT .htaccess', '~/T/.htaccess', 'x'),
      put('PUT a .part name', '~/T/x.part', 'x', {}),
      create('PUT a .part name create-only', '~/T/x.part', 'x'),
      mkcol('MKCOL a .part name', '~/T/y.part'),
      move('MOVE onto a .part name', '~/T/CON', '{files}/T/z.part'),
      create(`PUT a ${LONG_OK.length}-byte name`, `~/T/${LONG_OK}`, 'x'),
      create(`PUT a ${LONG_PUT_FAILS.length}-byte name`, `~/T/${LONG_PUT_FAILS}`, 'x'),
      mkcol(`MKCOL a ${LONG_PUT_FAILS.length}-byte name`, `~/T/${LONG_PUT_FAILS}`),
      create(`PUT a ${LONG_REFUSED.length}-byte name`, `~/T/${LONG_REFUSED}`, 'x'),
      get('GET a URL path over 4 KB', `~/T/${'v/'.repeat(2100)}w`),
      propfind('PROPFIND after the odd names', '~/T'),
    ],
  },
  {
    name: 'checkout token locks (LOCK, If, UNLOCK)',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'v1', { etag: 'v1' }),
      propfind('PROPFIND before the lock', '~/T/a.txt', '0'),
      put('PUT with a token on an unlocked file', '~/T/a.txt', 'x', {
        If: '(<opaquelocktoken:00000000-0000-0000-0000-000000000000>)',
      }),
      lock('LOCK (exclusive write, Depth 0, Timeout)', '~/T/a.txt', 'L'),
      { ...propfind('PROPFIND of the locked file', '~/T/a.txt', '0'), etag: 'locked' },
      put('PUT If-Match the current etag without the token', '~/T/a.txt', 'x', {
        'If-Match': '{etag:locked}',
      }),
      lock('LOCK a locked file again', '~/T/a.txt', 'L2'),
      put('PUT without the token (the owner\u2019s own client)', '~/T/a.txt', 'x', {}),
      put('PUT If-Match without the token', '~/T/a.txt', 'x', { 'If-Match': '{etag:v1}' }),
      del('DELETE without the token', '~/T/a.txt'),
      move('MOVE without the token', '~/T/a.txt', '{files}/T/b.txt'),
      put('PUT with a wrong token', '~/T/a.txt', 'x', {
        If: '(<opaquelocktoken:00000000-0000-0000-0000-000000000000>)',
      }),
      put('PUT with an If etag that does not match', '~/T/a.txt', 'x', { If: '(["0123abc"])' }),
      NEXT_SECOND,
      put(
        'PUT with the token (checkin)',
        '~/T/a.txt',
        'v2',
        { If: '(<{lock:L}>)' },
        { etag: 'v2' },
      ),
      get('GET under the lock', '~/T/a.txt'),
      propfind('PROPFIND after the checkin write', '~/T/a.txt', '0'),
      {
        name: 'LOCK refresh with If and no body',
        method: 'LOCK',
        target: '~/T/a.txt',
        headers: { If: '(<{lock:L}>)', Timeout: 'Second-900' },
      },
      propfind('PROPFIND after the refresh', '~/T/a.txt', '0'),
      unlock('UNLOCK without a Lock-Token header', '~/T/a.txt', undefined),
      unlock(
        'UNLOCK with a wrong token',
        '~/T/a.txt',
        'opaquelocktoken:00000000-0000-0000-0000-000000000000',
      ),
      unlock('UNLOCK with the token', '~/T/a.txt', '{lock:L}'),
      propfind('PROPFIND after the unlock', '~/T/a.txt', '0'),
      unlock('UNLOCK an unlocked file', '~/T/a.txt', '{lock:L}'),
      NEXT_SECOND,
      put('PUT without a token after the unlock', '~/T/a.txt', 'v3', {}),
      lock('LOCK a missing path (creates it)', '~/T/new.txt', 'N'),
      propfind('PROPFIND the file the LOCK created', '~/T/new.txt', '0'),
      del('DELETE it under its token', '~/T/new.txt', { If: '(<{lock:N}>)' }),
      propfind('PROPFIND after that DELETE', '~/T/new.txt', '0'),
      lock('LOCK in a missing folder', '~/Missing/new.txt', 'M'),
    ],
  },
  {
    name: 'user locks (X-User-Lock, the OCS lock API)',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'v1', { fileid: 'a' }),
      {
        name: 'LOCK X-User-Lock: 1',
        method: 'LOCK',
        target: '~/T/a.txt',
        headers: { 'X-User-Lock': '1' },
      },
      NEXT_SECOND,
      put('PUT by the lock owner without a token', '~/T/a.txt', 'v2', {}),
      {
        name: 'UNLOCK X-User-Lock: 1',
        method: 'UNLOCK',
        target: '~/T/a.txt',
        headers: { 'X-User-Lock': '1' },
      },
      {
        name: 'OCS lock without OCS-APIRequest',
        method: 'PUT',
        target: '/ocs/v2.php/apps/files_lock/lock/{fileid:a}?format=json',
        headers: { Accept: 'application/json' },
      },
      {
        name: 'OCS lock',
        method: 'PUT',
        target: '/ocs/v2.php/apps/files_lock/lock/{fileid:a}?format=json',
        headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
      },
      NEXT_SECOND,
      put('PUT by the lock owner under an OCS lock', '~/T/a.txt', 'v3', {}),
      {
        name: 'OCS unlock',
        method: 'DELETE',
        target: '/ocs/v2.php/apps/files_lock/lock/{fileid:a}?format=json',
        headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
      },
      {
        name: 'OCS unlock of an unlocked file',
        method: 'DELETE',
        target: '/ocs/v2.php/apps/files_lock/lock/{fileid:a}?format=json',
        headers: { 'OCS-APIRequest': 'true', Accept: 'application/json' },
      },
    ],
  },
  {
    name: 'a checkout confirmed and released by its lock properties',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'v1', { fileid: 'a' }),
      inspect('PROPFIND the lock props of an unlocked file', '~/T/a.txt'),
      lock('LOCK', '~/T/a.txt', 'L'),
      inspect('PROPFIND the lock props under the token lock', '~/T/a.txt'),
      inspect('PROPFIND the lock props of the folder (Depth 1)', '~/T', '1'),
      ocsUnlock('OCS unlock of the token lock (the owner breaks the checkout)', 'a'),
      inspect('PROPFIND the lock props after the owner broke it', '~/T/a.txt'),
      unlock('UNLOCK with the broken lock’s token', '~/T/a.txt', '{lock:L}'),
      lock('LOCK again', '~/T/a.txt', 'M'),
      unlock('UNLOCK', '~/T/a.txt', '{lock:M}'),
      inspect('PROPFIND the lock props after the UNLOCK', '~/T/a.txt'),
      unlock('UNLOCK again (already released)', '~/T/a.txt', '{lock:M}'),
    ],
  },
  {
    name: 'a token LOCK over the user’s own user lock makes no lock',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'v1'),
      {
        name: 'LOCK X-User-Lock: 1',
        method: 'LOCK',
        target: '~/T/a.txt',
        headers: { 'X-User-Lock': '1' },
      },
      inspect('PROPFIND the lock props under the user lock', '~/T/a.txt'),
      lock('a token LOCK over it (200, a token)', '~/T/a.txt', 'P'),
      inspect('PROPFIND the lock props after that LOCK', '~/T/a.txt'),
      NEXT_SECOND,
      put('PUT with the token that LOCK returned', '~/T/a.txt', 'v2', { If: '(<{lock:P}>)' }),
      unlock('UNLOCK with that token', '~/T/a.txt', '{lock:P}'),
      put('PUT by the lock owner without a token', '~/T/a.txt', 'v3', {}),
    ],
  },
  {
    name: 'received shares (mount props, trash, move)',
    received: ['Shared', 'Other'],
    steps: [
      propfind('PROPFIND Depth 1 of the home (the broker’s listing)', '~/'),
      inspect('PROPFIND the mount props of the home (Depth 1)', '~/', '1'),
      inspect('PROPFIND the mount props of a share root', '~/Shared'),
      inspect('PROPFIND the mount props inside a share (Depth 1)', '~/Shared', '1'),
      mkcol('MKCOL a folder of the user’s', '~/Mine'),
      move('MOVE a share root into it', '~/Shared', '{files}/Mine/Shared'),
      inspect('PROPFIND the moved share root', '~/Mine/Shared'),
      move('MOVE a share root into another share', '~/Mine/Shared', '{files}/Other/Shared'),
      del('DELETE a file inside a share', '~/Mine/Shared/inner.txt'),
      trashList('the trash bin after that DELETE'),
      create('PUT a file of the user’s next to the share', '~/Mine/own.txt', 'mine'),
      del('DELETE a folder that holds a share', '~/Mine'),
      trashList('the trash bin after deleting the folder'),
      propfind('PROPFIND Depth 1 of the home after it', '~/'),
      del('DELETE a share root', '~/Other'),
      trashList('the trash bin after deleting the share root'),
      propfind('PROPFIND the deleted share root', '~/Other', '0'),
    ],
  },
  {
    name: 'capabilities, status and authentication',
    steps: [
      capabilities('GET capabilities'),
      capabilities('GET capabilities without credentials', 'none'),
      {
        name: 'GET cloud/user',
        method: 'GET',
        target: '/ocs/v2.php/cloud/user?format=json',
        headers: { 'OCS-APIRequest': 'true' },
      },
      {
        name: 'GET cloud/user without credentials',
        method: 'GET',
        target: '/ocs/v2.php/cloud/user?format=json',
        headers: { 'OCS-APIRequest': 'true' },
        auth: 'none',
      },
      {
        name: "GET status.php (the doctor's reachability check)",
        method: 'GET',
        target: '/status.php',
        headers: { Accept: 'application/json' },
        auth: 'none',
      },
      { ...propfind('PROPFIND with a wrong app password', '~/', '0'), auth: 'wrong' },
      capabilities('GET capabilities with a wrong app password', 'wrong'),
      { ...propfind('PROPFIND without credentials', '~/', '0'), auth: 'none' },
    ],
  },
  {
    name: 'files_lock disabled',
    filesLockOff: true,
    steps: [
      capabilities('GET capabilities'),
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'x'),
      { ...lock('LOCK', '~/T/a.txt', 'L'), read: { headers: ['allow'] } },
      unlock('UNLOCK', '~/T/a.txt', 'opaquelocktoken:00000000-0000-0000-0000-000000000000'),
      NEXT_SECOND,
      put('PUT without a token', '~/T/a.txt', 'y', {}),
    ],
  },
  {
    name: 'search (SEARCH on the DAV root, as the broker sends it)',
    steps: [
      { ...mkcol('MKCOL the folder', '~/Docs'), fileid: 'docs' },
      mkcol('MKCOL a subfolder', '~/Docs/sub'),
      mkcol('MKCOL a folder whose name matches', `~/Docs/${enc('Report folder')}`),
      create('PUT Report 2024', `~/Docs/${enc('Report 2024.txt')}`, 'x'),
      create('PUT report-final', '~/Docs/report-final.TXT', 'xy'),
      create('PUT deep report', `~/Docs/sub/${enc('deep report.txt')}`, 'xyz'),
      create('PUT R\u00e9port', `~/Docs/${enc('R\u00e9port.txt')}`, 'x'),
      create('PUT a_b', '~/Docs/a_b.txt', 'x'),
      create('PUT axb', '~/Docs/axb.txt', 'x'),
      create('PUT 100%', `~/Docs/${enc('100%.txt')}`, 'x'),
      create('PUT doc1', '~/Docs/doc1.txt', 'x'),
      create('PUT a name with XML specials', `~/Docs/${enc('a<&"\'b.txt')}`, 'x'),
      mkcol('MKCOL a sibling with the same prefix', '~/Docs2'),
      create('PUT in the sibling', '~/Docs2/report.txt', 'x'),
      {
        ...propfind("PROPFIND Depth 0 of the home (the root's file id)", '~/', '0'),
        fileid: 'home',
      },
      propfind('PROPFIND Depth 0 of the folder (the check before a search)', '~/Docs', '0'),
      search('SEARCH report below Docs', 'Docs', 'report', 'docs'),
      search('SEARCH REPORT (ASCII letters ignore case)', 'Docs', 'REPORT', 'docs'),
      search('SEARCH R\u00c9PORT (other letters do not)', 'Docs', 'R\u00c9PORT', 'docs'),
      search('SEARCH r\u00e9port (accents count)', 'Docs', 'r\u00e9port', 'docs'),
      search('SEARCH a_b (the _ escaped)', 'Docs', 'a_b', 'docs'),
      search('SEARCH % (escaped)', 'Docs', '%', 'docs'),
      search('SEARCH a\\_b (the backslash escaped too)', 'Docs', 'a\\_b', 'docs'),
      search('SEARCH <&"\' (XML-escaped)', 'Docs', '<&"\'', 'docs'),
      search('SEARCH doc, one result (the folder itself left out)', 'Docs', 'doc', 'docs', {
        limit: 1,
      }),
      search('SEARCH report, first page of two', 'Docs', 'report', 'docs', { limit: 3 }),
      search('SEARCH report, second page', 'Docs', 'report', 'docs', { limit: 3, offset: 2 }),
      search('SEARCH past the end', 'Docs', 'report', 'docs', { limit: 3, offset: 10 }),
      search('SEARCH the whole account', '', 'report', 'home'),
    ],
  },
  {
    name: 'search: how the server reads a scope, a literal and a limit',
    steps: [
      { ...mkcol('MKCOL the folder', '~/Docs'), fileid: 'docs' },
      create('PUT doc1', '~/Docs/doc1.txt', 'x'),
      create('PUT doc2', '~/Docs/doc2.txt', 'x'),
      create('PUT a file', '~/Docs/a.txt', 'x'),
      mkcol('MKCOL a folder with a space and an ampersand', `~/${enc('Caf\u00e9 & co')}`),
      create('PUT in it', `~/${enc('Caf\u00e9 & co')}/${enc('menu doc.txt')}`, 'x'),
      { ...mkcol('MKCOL ties', '~/Ties'), fileid: 'ties' },
      mkcol('MKCOL ties/b', '~/Ties/b'),
      mkcol('MKCOL ties/a', '~/Ties/a'),
      create('PUT b/same', '~/Ties/b/same.txt', 'x'),
      create('PUT a/same', '~/Ties/a/same.txt', 'x'),
      create('PUT same', '~/Ties/same.txt', 'x'),
      rawSearch('SEARCH on the files URL (501)', '/files/{user}/Docs', like('%doc%'), {
        target: '~/Docs',
      }),
      rawSearch('SEARCH without the trailing slash', '/files/{user}/Docs', like('%doc%'), {
        target: '/remote.php/dav',
      }),
      rawSearch(
        'SEARCH where the folder matches its own query: it takes a place',
        '/files/{user}/Docs',
        like('%doc%'),
        { limit: 2 },
      ),
      rawSearch(
        'SEARCH without an order, where the folder matches: it comes last',
        '/files/{user}/Docs',
        like('%doc%'),
        { limit: 2, unordered: true },
      ),
      rawSearch('SEARCH nresults 0', '/files/{user}/Docs', like('%'), { limit: 0 }),
      rawSearch('SEARCH a missing folder', '/files/{user}/Missing', like('%')),
      rawSearch('SEARCH a folder in the wrong case', '/files/{user}/docs', like('%')),
      rawSearch('SEARCH a file', '/files/{user}/Docs/a.txt', like('%')),
      rawSearch('SEARCH the files of a user who does not exist', '/files/nobody-here', like('%')),
      rawSearch('SEARCH /files', '/files', like('%')),
      rawSearch('SEARCH the DAV URL as the scope', '/remote.php/dav/files/{user}/Docs', like('%')),
      rawSearch('SEARCH through ..', '/files/{user}/Docs/../Ties', like('%')),
      rawSearch(
        'SEARCH a raw scope with a space and &amp;',
        '/files/{user}/Caf\u00e9 &amp; co',
        like('%doc%'),
      ),
      rawSearch(
        'SEARCH a percent-encoded scope (not decoded)',
        '/files/{user}/Caf%C3%A9%20%26%20co',
        like('%doc%'),
      ),
      rawSearch(
        'SEARCH an NFD scope',
        `/files/{user}/${'Caf\u00e9'.normalize('NFD')} &amp; co`,
        like('%doc%'),
      ),
      rawSearch('SEARCH an NFC literal', '/files/{user}', like('%caf\u00e9%')),
      rawSearch(
        'SEARCH an NFD literal (not normalised)',
        '/files/{user}',
        like(`%${'caf\u00e9'.normalize('NFD')}%`),
      ),
      rawSearch(
        'SEARCH a like on getetag',
        '/files/{user}/Docs',
        '<d:like><d:prop><d:getetag/></d:prop><d:literal>%</d:literal></d:like>',
      ),
      rawSearch('SEARCH ties in name order: creation order', '/files/{user}/Ties', like('same%')),
      search('SEARCH ties as the broker asks', 'Ties', 'same', 'ties'),
      {
        ...rawSearch('SEARCH with a body that is not XML (501)', '/files/{user}/Docs', like('%')),
        headers: { 'Content-Type': 'application/octet-stream' },
      },
    ],
  },
  {
    name: 'server-side hashes of uploads (X-Hash)',
    steps: [
      mkcol('MKCOL', '~/T'),
      hashed('PUT X-Hash: sha256 (new file)', '~/T/a.txt', 'hash me', 'sha256', {
        'If-None-Match': '*',
      }),
      NEXT_SECOND,
      hashed('PUT X-Hash: sha256 (overwrite)', '~/T/a.txt', 'hash me too', 'sha256'),
      hashed('PUT X-Hash: md5', '~/T/b.txt', 'md5', 'md5'),
      hashed('PUT X-Hash: all', '~/T/c.txt', 'all', 'all'),
      hashed('PUT X-Hash: SHA256 (the value is case-sensitive)', '~/T/d.txt', 'x', 'SHA256'),
      hashed('PUT X-Hash: sha256,md5 (one algorithm only)', '~/T/e.txt', 'x', 'sha256,md5'),
    ],
  },
  {
    name: 'chunked upload v2: a new file, and what each step refuses',
    steps: [
      mkcol('MKCOL', '~/T'),
      uploadFolder('MKCOL an upload folder', 'u1', '{files}/T/big.bin'),
      uploadFolder('MKCOL it again', 'u1', '{files}/T/big.bin'),
      { name: 'MKCOL inside an upload folder', method: 'MKCOL', target: `${UPLOADS}/u1/sub` },
      chunk('PUT chunk 1', 'u1', '1', 'first chunk ', '{files}/T/big.bin', 23),
      chunk('PUT chunk 2', 'u1', '2', 'second one', '{files}/T/big.bin', 23),
      chunk('PUT chunk 1 again', 'u1', '1', 'first chunk ', '{files}/T/big.bin', 22),
      chunk('PUT .file', 'u1', '.file', 'x', '{files}/T/big.bin', 1),
      chunk('PUT into a missing upload folder', 'none', '1', 'x', '{files}/T/x.bin', 1),
      commit('MOVE with If-None-Match: * (checked against .file)', 'u1', '{files}/T/big.bin', 22, {
        'If-None-Match': '*',
      }),
      commit('MOVE with If-Match (checked against .file)', 'u1', '{files}/T/big.bin', 22, {
        'If-Match': '"0123456789abcdef"',
      }),
      commit('MOVE with a wrong OC-Total-Length', 'u1', '{files}/T/big.bin', 21, {
        Overwrite: 'F',
      }),
      commit('MOVE into a missing folder', 'u1', '{files}/Nope/big.bin', 22, { Overwrite: 'F' }),
      commit('MOVE with Overwrite: F to a free name', 'u1', '{files}/T/big.bin', 22, {
        Overwrite: 'F',
      }),
      dropFolder('DELETE the upload folder after the MOVE', 'u1'),
      get('GET the assembled file', '~/T/big.bin'),
    ],
  },
  {
    name: 'chunked upload v2: replacing only the fetched version',
    steps: [
      mkcol('MKCOL', '~/T'),
      mkcol('MKCOL a folder', '~/T/F'),
      create('PUT a file', '~/T/a.txt', 'v1', { etag: 'a' }),
      uploadFolder('MKCOL an upload folder', 'u2', '{files}/T/a.txt'),
      chunk('PUT chunk 1', 'u2', '1', 'version two', '{files}/T/a.txt', 11),
      commit('MOVE with Overwrite: F onto the file', 'u2', '{files}/T/a.txt', 11, {
        Overwrite: 'F',
      }),
      commit('MOVE tagged with a stale etag', 'u2', '{files}/T/a.txt', 11, {
        If: '<{files}/T/a.txt> (["0123456789abcdef"])',
      }),
      commit('MOVE tagged with an empty etag', 'u2', '{files}/T/a.txt', 11, {
        If: '<{files}/T/a.txt> ([""])',
      }),
      commit('MOVE onto a folder', 'u2', '{files}/T/F', 11, {}),
      commit('MOVE tagged, to a missing file', 'u2', '{files}/T/gone.txt', 11, {
        If: '<{files}/T/gone.txt> ([{etag:a}])',
      }),
      dropFolder('DELETE probe: the folder is kept after refusals', 'u2'),
      uploadFolder('MKCOL a new upload folder', 'u3', '{files}/T/a.txt'),
      chunk('PUT chunk 1', 'u3', '1', 'version two', '{files}/T/a.txt', 11),
      NEXT_SECOND,
      commit('MOVE tagged with the current etag', 'u3', '{files}/T/a.txt', 11, {
        If: '<{files}/T/a.txt> ([{etag:a}])',
      }),
      dropFolder('DELETE probe: gone after the MOVE', 'u3'),
      get('GET the replaced file', '~/T/a.txt'),
    ],
  },
  {
    name: 'chunked upload v2 onto a checked-out (token-locked) file',
    steps: [
      mkcol('MKCOL', '~/T'),
      create('PUT a file', '~/T/a.txt', 'v1'),
      lock('LOCK', '~/T/a.txt', 'L'),
      { ...propfind('PROPFIND its etag under the lock', '~/T/a.txt', '0'), etag: 'b' },
      uploadFolder('MKCOL an upload folder', 'u4', '{files}/T/a.txt'),
      chunk('PUT chunk 1', 'u4', '1', 'checked in', '{files}/T/a.txt', 10),
      commit('MOVE tagged with the etag, no token', 'u4', '{files}/T/a.txt', 10, {
        If: '<{files}/T/a.txt> ([{etag:b}])',
      }),
      commit('MOVE with Overwrite: F, no token', 'u4', '{files}/T/a.txt', 10, { Overwrite: 'F' }),
      commit('MOVE tagged with a wrong token', 'u4', '{files}/T/a.txt', 10, {
        If: '<{files}/T/a.txt> (<opaquelocktoken:00000000-0000-0000-0000-000000000000>)',
      }),
      commit('MOVE tagged with the token and a stale etag', 'u4', '{files}/T/a.txt', 10, {
        If: '<{files}/T/a.txt> (<{lock:L}> ["0123456789abcdef"])',
      }),
      put('PUT with the token and a stale etag', '~/T/a.txt', 'x', {
        If: '(<{lock:L}> ["0123456789abcdef"])',
      }),
      NEXT_SECOND,
      commit('MOVE tagged with the token and the current etag', 'u4', '{files}/T/a.txt', 10, {
        If: '<{files}/T/a.txt> (<{lock:L}> [{etag:b}])',
      }),
      dropFolder('DELETE probe: gone after the MOVE', 'u4'),
      inspect('PROPFIND: the lock stays', '~/T/a.txt'),
      unlock('UNLOCK', '~/T/a.txt', '{lock:L}'),
    ],
  },
  ...GROUPWARE_CASES,
  ...QUOTA_CASES,
  ...RECORDS_CASES,
  ...SPACE_CASES,
];
