/**
 * Checks one Nextcloud instance against the real server: reachable (status.php, no
 * credentials), the app password accepted (exactly one authenticated PROPFIND, never
 * retried), and the capabilities the broker relies on (trash bin, files_lock).
 */
import type { InstanceConfig } from '../config.js';
// The doctor holds a connection and reads the capabilities; the file verbs (the client)
// are the pipeline's alone.
import { CapabilitiesCache } from '../nextcloud/capabilities.js';
import { NextcloudConnection } from '../nextcloud/connection.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { buildDavUrl } from '../nextcloud/url.js';
import { answerOf, type AnswerSink } from '../nextcloud/answers.js';
import { type Check, fail, pass, skip } from './checklist.js';
import { checkRetentionDeclaration, checkSpace } from './space.js';
import { checkUndo } from './undo.js';

export interface NextcloudCheckDeps {
  /** Per request. Default 10 s. */
  timeoutMs?: number;
  /** Where each answer's request id goes (the doctor records them: requests.ts). */
  onAnswer?: AnswerSink;
}

const PROPFIND_DEPTH0 =
  '<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/></d:prop></d:propfind>';

type Probe = { ok: true; res: Response } | { ok: false; detail: string };

function describeFetchError(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer (timed out)';
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.name : 'unknown error';
}

async function probe(url: URL, init: RequestInit, timeoutMs: number): Promise<Probe> {
  try {
    // Security: redirects are reported, never followed, so credentials go only to the
    // configured URL.
    return {
      ok: true,
      res: await fetch(url, {
        ...init,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      }),
    };
  } catch (error) {
    return { ok: false, detail: describeFetchError(error) };
  }
}

/** The instance's base URL with a path appended (keeps a sub-folder install's folder). */
function under(base: string, suffix: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${suffix}`;
  return url;
}

function throttled(inst: InstanceConfig, detail: string): Check {
  return fail(
    'Nextcloud is throttling requests from this address (too many failed logins)',
    `fix instances.${inst.name}.app_password, wait a few minutes, then run doctor once; an admin can lift it with \`occ security:bruteforce:reset <ip>\``,
    detail,
  );
}

async function checkReachable(inst: InstanceConfig, timeoutMs: number): Promise<Check> {
  const key = `instances.${inst.name}.url`;
  const url = under(inst.url, 'status.php');
  const r = await probe(url, { method: 'GET', headers: { accept: 'application/json' } }, timeoutMs);
  if (!r.ok)
    return fail(
      `${inst.url} is not reachable`,
      `check ${key}, that the server is up, and that this machine can reach it (DNS, firewall, TLS certificate)`,
      r.detail,
    );
  const { res } = r;
  const body = await res.text().catch(() => '');
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get('location') ?? '(no Location)';
    return fail(
      `${inst.url} redirects instead of answering`,
      `set ${key} to the address it redirects to (the broker does not follow redirects)`,
      `status.php answered ${res.status} → ${location.slice(0, 200)}`,
    );
  }
  // The brute-force throttle covers every request from this address, status.php too.
  if (res.status === 429) return throttled(inst, 'status.php answered HTTP 429');
  let status: { installed?: unknown; maintenance?: unknown; versionstring?: unknown } | undefined;
  try {
    status = JSON.parse(body) as typeof status;
  } catch {
    status = undefined;
  }
  if (
    res.status !== 200 ||
    typeof status !== 'object' ||
    status === null ||
    status.installed === undefined
  )
    return fail(
      `no Nextcloud answers at ${inst.url}`,
      `set ${key} to the address you open Nextcloud at, including its folder if it is not at the root`,
      `status.php answered HTTP ${res.status}`,
    );
  if (status.installed !== true)
    return fail(
      `${inst.url} is a Nextcloud that is not installed yet`,
      'finish the Nextcloud installation',
    );
  if (status.maintenance === true)
    return fail(
      `${inst.url} is in maintenance mode`,
      'wait for the maintenance to end (or `occ maintenance:mode --off`), then run doctor again',
    );
  const version =
    typeof status.versionstring === 'string' ? ` ${status.versionstring.slice(0, 32)}` : '';
  return pass(`${inst.url} is reachable (Nextcloud${version})`);
}

async function checkCredentials(
  inst: InstanceConfig,
  timeoutMs: number,
  onAnswer: AnswerSink | undefined,
): Promise<Check> {
  const pw = `instances.${inst.name}.app_password`;
  const user = `instances.${inst.name}.username`;
  const url = buildDavUrl(inst.url, inst.username, '');
  const basic = Buffer.from(`${inst.username}:${inst.app_password}`).toString('base64');
  // Security: one request with the credentials, never retried: Nextcloud slows down and
  // then blocks the whole address after repeated failed logins.
  const r = await probe(
    url,
    {
      method: 'PROPFIND',
      headers: {
        authorization: `Basic ${basic}`,
        depth: '0',
        'content-type': 'application/xml; charset=utf-8',
      },
      body: PROPFIND_DEPTH0,
    },
    timeoutMs,
  );
  if (!r.ok)
    return fail(
      `the credentials could not be checked`,
      'check the connection and run doctor again',
      r.detail,
    );
  const status = r.res.status;
  const answer = answerOf('PROPFIND', status, Object.fromEntries(r.res.headers));
  if (answer !== undefined) onAnswer?.(answer);
  await r.res.body?.cancel().catch(() => undefined);
  if (status === 207) return pass(`credentials accepted (user ${inst.username})`);
  if (status === 401)
    return fail(
      `Nextcloud refused the app password for ${inst.username}`,
      `create a new app password (Nextcloud → Settings → Security → Devices & sessions) and put it in ${pw}; check ${user} is the login name. Not retried: Nextcloud throttles failed logins`,
      'HTTP 401',
    );
  if (status === 429) return throttled(inst, 'HTTP 429');
  if (status === 404)
    return fail(
      `Nextcloud has no files for user "${inst.username}"`,
      `set ${user} to the user id in the WebDAV address shown in Files → Settings (…/remote.php/dav/files/<user id>/)`,
      'HTTP 404',
    );
  if (status === 403)
    return fail(
      `Nextcloud forbids ${inst.username} to use WebDAV`,
      'ask the Nextcloud admin to allow WebDAV for this account',
      'HTTP 403',
    );
  return fail(
    'Nextcloud answered the credentials check unexpectedly',
    "check the server's logs and run doctor again",
    `HTTP ${status}`,
  );
}

async function checkCapabilities(
  inst: InstanceConfig,
  timeoutMs: number,
  onAnswer: AnswerSink | undefined,
): Promise<Check[]> {
  const conn = new NextcloudConnection(inst, { timeoutMs, ...(onAnswer ? { onAnswer } : {}) });
  try {
    const caps = await conn.guard(() => new CapabilitiesCache(conn, 0).fetch());
    return [
      caps.undelete
        ? pass('trash bin on (files.undelete): trashed files can be restored')
        : fail(
            "trash bin off (capability files.undelete missing): the agent's trash is refused",
            'enable the Deleted files app (Apps → Deleted files, or `occ app:enable files_trashbin`)',
          ),
      caps.locking
        ? pass('file locking on (files.locking): checkout/checkin can lock files')
        : fail(
            'file locking off (capability files.locking missing): checkout and checkin are refused',
            'install and enable the Temporary files lock app (`occ app:install files_lock`)',
          ),
      checkUndo(inst, caps),
    ];
  } catch (error) {
    const detail =
      error instanceof NextcloudError ? `${error.code}: ${error.message}` : 'unknown error';
    return [
      fail(
        'the capabilities could not be read',
        "check the server's logs and run doctor again",
        detail,
      ),
      skip('file locking (files.locking): not checked'),
      skip('undo (files.versioning, files.undelete): not checked'),
    ];
  } finally {
    conn.close();
  }
}

export async function checkInstance(
  inst: InstanceConfig,
  deps: NextcloudCheckDeps = {},
): Promise<Check[]> {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const reachable = await checkReachable(inst, timeoutMs);
  if (reachable.status === 'fail')
    return [
      reachable,
      skip('credentials: not checked (the server is not reachable)'),
      skip('trash bin (files.undelete): not checked'),
      skip('file locking (files.locking): not checked'),
      skip('undo (files.versioning): not checked'),
    ];
  const credentials = await checkCredentials(inst, timeoutMs, deps.onAnswer);
  if (credentials.status === 'fail')
    return [
      reachable,
      credentials,
      skip('trash bin (files.undelete): not checked (credentials first)'),
      skip('file locking (files.locking): not checked (credentials first)'),
      skip('undo (files.versioning): not checked (credentials first)'),
    ];
  return [
    reachable,
    credentials,
    ...(await checkCapabilities(inst, timeoutMs, deps.onAnswer)),
    await checkSpace(inst, timeoutMs, deps.onAnswer),
    checkRetentionDeclaration(inst),
  ];
}
