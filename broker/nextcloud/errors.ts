/**
 * Typed errors of the Nextcloud client and the mapping from HTTP answers to them.
 * Every message is one line naming the cause and the next step (docs/architecture.md); the client
 * scrubs it before it leaves the layer.
 */
import { WALL_MAX_COMPONENT_BYTES } from '../base/limits.js';
import { CodedError } from '../base/coded-error.js';

export type NextcloudErrorCode =
  | 'invalid_path' // the path cannot be sent safely (refused before any request)
  | 'invalid_argument' // a cursor page size, etag, lock token or timeout is malformed
  | 'bad_cursor' // a list cursor is forged, tampered with, or belongs to another listing
  | 'bad_request' // 400 from Nextcloud
  | 'unauthorized' // 401: the app password is wrong; the client stopped using it
  | 'forbidden' // 403
  | 'not_found' // 404
  | 'exists' // MKCOL 405: something already exists there
  | 'conflict' // 409: missing parent folder, or a move into its own subtree
  | 'precondition_failed' // PUT 412: exists (create) or changed since read (replace)
  | 'destination_exists' // MOVE 412 with Overwrite: F
  | 'range_not_satisfiable' // 416
  | 'locked' // 423
  | 'throttled' // 429: Nextcloud's brute-force protection
  | 'insufficient_storage' // 507
  | 'locking_unavailable' // LOCK 501: the files_lock app is not enabled
  | 'bad_lock_token' // UNLOCK 500: the token does not match the lock
  | 'trash_disabled' // DELETE refused because the trash bin is off
  | 'is_folder' // read or lock of a folder
  | 'not_folder' // list of a file
  | 'name_too_long' // upload of a name Nextcloud cannot store
  | 'server_error' // 5xx after the one retry
  | 'unexpected_status' // any other status
  | 'bad_response' // a reply that does not parse or breaks an invariant
  | 'aborted' // the upload body failed or had the wrong size
  | 'verification_failed' // Nextcloud's hash of what it stored differs from what was sent
  | 'lock_not_taken' // a LOCK answered with a token, but Nextcloud holds no such lock
  | 'not_trashable' // a DELETE would unshare or unmount, not trash: refused before sending
  | 'cancelled' // the caller's signal stopped the request (the operation's grant ended)
  | 'collection_ambiguous' // two calendars or address books answer to one name: refused
  | 'not_a_collection' // the name is not a calendar (of events) or an address book
  | 'calendar_unreadable' // REPORT 500: an event repeats too often; every query fails
  | 'uid_exists' // PUT 400: an object with this UID is already in the collection
  | 'unreachable' // network error
  | 'timeout'; // no answer (or no progress) within the timeout

/** Codes where trying the same call again later can succeed. */
const RETRYABLE: ReadonlySet<NextcloudErrorCode> = new Set<NextcloudErrorCode>([
  'locked',
  'throttled',
  'server_error',
  'unreachable',
  'timeout',
  'aborted',
]);

export class NextcloudError extends CodedError<NextcloudErrorCode> {
  override readonly name = 'NextcloudError';
  readonly retry: boolean;
  readonly status?: number;
  /** The server's own `<s:message>`, one short line (already part of `message`). */
  readonly serverMessage?: string;

  constructor(
    code: NextcloudErrorCode,
    message: string,
    options: { status?: number; retry?: boolean; serverMessage?: string } = {},
  ) {
    super(code, message);
    this.retry = options.retry ?? RETRYABLE.has(code);
    if (options.status !== undefined) this.status = options.status;
    if (options.serverMessage !== undefined) this.serverMessage = options.serverMessage;
  }
}

/** The WebDAV verbs (and OCS call) the client sends. */
export type Verb =
  | 'PROPFIND'
  | 'SEARCH'
  | 'GET'
  | 'PUT'
  | 'MKCOL'
  | 'MOVE'
  | 'DELETE'
  | 'LOCK'
  | 'UNLOCK'
  | 'REPORT'
  | 'CAPABILITIES'
  | 'SPACE'
  | 'ACTIVITY';

export interface StatusContext {
  verb: Verb;
  instance: string;
  /** The canonical path acted on ('' for the root or OCS). */
  path: string;
  /** MOVE: the destination. */
  to?: string;
  /** PUT: which precondition was sent (`locked`: a lock token only). */
  write?: 'create' | 'replace' | 'replace_locked' | 'locked';
  /** The `<s:message>` of a Sabre error body, already reduced to one short line. */
  serverMessage?: string;
  /** The `<s:exception>` class of a Sabre error body. */
  serverException?: string;
}

/**
 * Nextcloud 34 answers a protected name (`.htaccess`) with 500 and this exception where
 * 29 answered 403: a refusal, not a server fault.
 */
const FORBIDDEN_EXCEPTION = 'OCP\\Files\\ForbiddenException';

/** A 5xx whose exception says the server refused the request: never retried. */
export function isRefusalException(exception: string | undefined): boolean {
  return exception === FORBIDDEN_EXCEPTION;
}

function quote(path: string): string {
  return path === '' ? 'the root folder' : `'${path}'`;
}

/**
 * The file as the agent's `broker` CLI names it (`personal:Docs/a.txt`): transfer answers
 * end up in the CLI's output, so their next steps name its commands, not the transfer
 * tools' arguments (the agent never sees `if_match` or a lock token).
 */
function cliTarget(ctx: StatusContext): string {
  return `${ctx.instance}:${ctx.path}`;
}

/** Map a non-success HTTP status to an error naming the cause and the next step. */
export function errorForStatus(status: number, ctx: StatusContext): NextcloudError {
  const at = quote(ctx.path);
  const inst = `instance '${ctx.instance}'`;
  const detail = ctx.serverMessage ? ` (Nextcloud: ${ctx.serverMessage})` : '';
  const make = (code: NextcloudErrorCode, message: string): NextcloudError =>
    new NextcloudError(code, message, {
      status,
      ...(ctx.serverMessage === undefined ? {} : { serverMessage: ctx.serverMessage }),
    });

  // Security: a refusal must not read as "try again later" (the agent would retry it).
  const refused = status === 500 && isRefusalException(ctx.serverException);
  switch (refused ? 403 : status) {
    case 400:
      return make(
        'bad_request',
        `Nextcloud refused the request for ${at} as invalid${detail}: check the name (no backslash or control characters, at most ${WALL_MAX_COMPONENT_BYTES} bytes)`,
      );
    case 401:
      return make(
        'unauthorized',
        `re-authenticate: Nextcloud rejected the app password for ${inst}; the broker stopped using it until the owner checks the app password and restarts`,
      );
    case 403:
      return make(
        'forbidden',
        `permission denied by Nextcloud for ${at} on ${inst}${detail}: the share may be read-only or the name protected; ask the owner`,
      );
    case 404:
      if (ctx.verb === 'PUT')
        return make(
          'not_found',
          `the parent folder of ${at} does not exist on ${inst}: create it with mkdir first`,
        );
      return make('not_found', `${at} does not exist on ${inst}: check the path with list`);
    case 405:
      if (ctx.verb === 'MKCOL')
        return make('exists', `${at} already exists on ${inst}: nothing to create`);
      break;
    case 409:
      if (ctx.verb === 'MOVE')
        return make(
          'conflict',
          `cannot move ${at} to ${quote(ctx.to ?? '')}: the target folder does not exist or is inside the source; create the folder first or choose another target`,
        );
      return make(
        'conflict',
        `the parent folder of ${at} does not exist on ${inst}: create it with mkdir first`,
      );
    case 412:
      if (ctx.verb === 'MOVE')
        return make(
          'destination_exists',
          `cannot move to ${quote(ctx.to ?? '')}: it already exists and moves never overwrite; choose another name or trash the target first`,
        );
      if (ctx.verb === 'GET')
        return new NextcloudError(
          'precondition_failed',
          `${at} changed while it was being opened on ${inst}: \`broker fetch ${cliTarget(ctx)}\` again`,
          { status, retry: true },
        );
      if (ctx.write === 'locked')
        return make(
          'bad_lock_token',
          `the lock on ${at} no longer holds (it expired or was released): \`broker checkout ${cliTarget(ctx)}\` again (to a new local path, so your copy stays) and reapply your change`,
        );
      if (ctx.write === 'replace_locked')
        return make(
          'precondition_failed',
          `${at} changed since it was fetched on ${inst}, or its lock no longer holds: \`broker checkout ${cliTarget(ctx)}\` again (to a new local path, so your copy stays) and reapply your change`,
        );
      if (ctx.write === 'create')
        return make(
          'precondition_failed',
          `${at} already exists (exists) on ${inst}: push to another name, or \`broker fetch ${cliTarget(ctx)}\` first and push your change to the fetched copy`,
        );
      return make(
        'precondition_failed',
        `${at} changed since it was fetched on ${inst} (its etag no longer matches): \`broker fetch ${cliTarget(ctx)}\` the current version (to a new local path, so your copy stays), reapply your change there and \`broker push\` that`,
      );
    case 416:
      return make(
        'range_not_satisfiable',
        `the requested byte range is outside ${at}: check the file size`,
      );
    case 423:
      return make(
        'locked',
        `${at} is locked on ${inst} (checked out or locked by someone else): try again after the lock is released`,
      );
    case 429:
      return make(
        'throttled',
        `Nextcloud is throttling requests from the broker on ${inst} (too many failed logins from its address): wait several minutes before trying again`,
      );
    case 501:
      if (ctx.verb === 'LOCK')
        return make(
          'locking_unavailable',
          `locking is unavailable on ${inst}: the files_lock app is not enabled; ask the owner to enable it, or use \`broker fetch\` and \`broker push\` instead (a push replaces only a file unchanged since it was fetched)`,
        );
      if (ctx.verb === 'SEARCH')
        return make(
          'unexpected_status',
          `WebDAV search is not available on ${inst} (Nextcloud answered 501): ask the owner to check the server's dav app`,
        );
      break;
    case 507:
      return make(
        'insufficient_storage',
        `Nextcloud has no space left for ${at} on ${inst} (quota full): free space or ask the owner`,
      );
    default:
      break;
  }
  if (status === 500 && ctx.verb === 'UNLOCK')
    return make(
      'bad_lock_token',
      `the lock token does not match the lock on ${at}: it may have been released already; \`broker checkout ${cliTarget(ctx)}\` again if you still need the file`,
    );
  if (status >= 500)
    return make(
      'server_error',
      `Nextcloud had a server error (${status}) for ${at} on ${inst}${detail}: try again later`,
    );
  return make(
    'unexpected_status',
    `Nextcloud answered ${status} to ${ctx.verb} ${at} on ${inst}${detail}: not retried; report this to the owner`,
  );
}
