/**
 * The soak's invariants, as pure functions over what was recorded: the fake Nextcloud's
 * request log (each request with the audit log's durable head at its arrival) and the
 * audit records read back from disk.
 */

export interface ArrivedRequest {
  method: string;
  /** Raw request target (percent-encoded, with query). */
  path: string;
  /** The audit log's durable head (seq) when the request reached Nextcloud. */
  durableSeq: number;
  /** The `Destination` header, when there was one (MOVE, a chunked upload's MKCOL). */
  destination?: string;
}

/**
 * The user path a request acts on: its DAV path, or for a request into a chunked-upload
 * folder the destination its MKCOL named (`folders` learns them in order).
 */
function actedOn(
  req: ArrivedRequest,
  user: string,
  folders: Map<string, string | undefined>,
): string | undefined {
  const uploads = `/remote.php/dav/uploads/${encodeURIComponent(user)}/`;
  const bare = req.path.split('?')[0] ?? '';
  if (!bare.startsWith(uploads)) return davPath(req.path, user);
  const id = bare.slice(uploads.length).split('/')[0] ?? '';
  if (req.method === 'MKCOL' && req.destination !== undefined)
    folders.set(id, davPath(new URL(req.destination).pathname, user));
  return folders.get(id) ?? `(upload folder ${id} without a destination)`;
}

/** The marker of the unique name a trash gives an item before its DELETE. */
const TRASHED = / \(trashed [a-z2-7]{8}\)(?=\.[^./]*$|$)/;

/**
 * Whether a request on `path` is one the operation on `intended` sends: the path itself,
 * the unique name its trash renamed it to (the DELETE and its reads), or, for a PROPFIND,
 * the folder a new file lands in (the space guard reads whose space that is).
 */
function actsFor(req: ArrivedRequest, path: string, intended: string): boolean {
  if (path === intended || path.replace(TRASHED, '') === intended) return true;
  const folder = intended.includes('/') ? intended.slice(0, intended.lastIndexOf('/')) : '';
  return req.method === 'PROPFIND' && path === folder;
}

/** Where reconciliation reads the account's own changes. */
const ACTIVITY_API = '/ocs/v2.php/apps/activity/api/v2/activity';

export interface AuditLine {
  seq: number;
  ts: string;
  event: string;
  [k: string]: unknown;
}

export interface Violation {
  check: string;
  detail: string;
}

/** The user-relative path a WebDAV request names, decoded; undefined for non-DAV (OCS). */
export function davPath(target: string, user: string): string | undefined {
  const prefix = `/remote.php/dav/files/${encodeURIComponent(user)}/`;
  const bare = target.split('?')[0] ?? '';
  if (!bare.startsWith(prefix)) return bare === prefix.slice(0, -1) ? '' : undefined;
  return bare
    .slice(prefix.length)
    .split('/')
    .filter((c) => c !== '')
    .map((c) => decodeURIComponent(c))
    .join('/');
}

function intentPaths(line: AuditLine): string[] {
  const out: string[] = [];
  for (const key of ['path', 'from', 'to']) {
    const v = line[key];
    if (typeof v === 'string') out.push(v);
  }
  return out;
}

/**
 * Every request Nextcloud received has an intent line for its path that was durable
 * before the request arrived (docs/architecture.md: no line, no operation). Requests without a
 * DAV path (OCS capabilities, asked before a trash) need some durable intent before them.
 * Returns the violations and, per request index, the seq of the intent it was matched to.
 */
export function intentsPrecedeRequests(
  requests: readonly ArrivedRequest[],
  records: readonly AuditLine[],
  user: string,
): { violations: Violation[]; matched: (number | undefined)[] } {
  const intents = records.filter((r) => r.event === 'intent');
  const violations: Violation[] = [];
  const matched: (number | undefined)[] = [];
  const folders = new Map<string, string | undefined>();
  for (const [i, req] of requests.entries()) {
    // Reconciliation's one kind of request goes without an intent by design: a read of
    // the account's own Activity stream, no operation of the agent's, its request id
    // recorded after it (docs/architecture.md, "Reconciliation").
    if (req.method === 'GET' && req.path.startsWith(ACTIVITY_API)) {
      matched.push(undefined);
      continue;
    }
    const path = actedOn(req, user, folders);
    const before = intents.filter((r) => r.seq <= req.durableSeq);
    const match =
      path === undefined
        ? before.at(-1)
        : before.findLast((r) => intentPaths(r).some((p) => actsFor(req, path, p)));
    matched.push(match?.seq);
    if (match === undefined) {
      violations.push({
        check: 'intent before request',
        detail: `request #${i} ${req.method} ${req.path} arrived with durable head ${req.durableSeq} and no earlier intent for ${path ?? '(no path)'}`,
      });
    }
  }
  return { violations, matched };
}

/**
 * No operation that reached Nextcloud ran outside a live grant: the intent it was
 * matched to names grants that were neither revoked (a `revoke` record listing the grant
 * with a lower seq) nor expired (the intent's time at or past the grant's expiry, from
 * its `decision` record) when the intent was written. The pipeline checks the grants
 * again after the intent is durable, so either would have had to stop it.
 */
export function operationsInsideLiveGrants(
  requests: readonly ArrivedRequest[],
  matched: readonly (number | undefined)[],
  records: readonly AuditLine[],
): Violation[] {
  const bySeq = new Map(records.map((r) => [r.seq, r]));
  const revokedAt = new Map<number, number>();
  const expiresAt = new Map<number, number>();
  for (const r of records) {
    if (r.event === 'revoke' && r.outcome === 'revoked' && Array.isArray(r.grants)) {
      for (const id of r.grants as number[]) if (!revokedAt.has(id)) revokedAt.set(id, r.seq);
    }
    if (r.event === 'decision' && Array.isArray(r.grants)) {
      for (const g of r.grants as { id: number; expires_at: string }[])
        expiresAt.set(g.id, Date.parse(g.expires_at));
    }
  }
  const violations: Violation[] = [];
  for (const [i, seq] of matched.entries()) {
    if (seq === undefined) continue;
    const intent = bySeq.get(seq);
    if (intent === undefined || !Array.isArray(intent.grants)) continue;
    // System clean-ups (unlocks after a grant ended, no `op`) run by design without one.
    if (intent.op === undefined) continue;
    for (const id of intent.grants as number[]) {
      const revoked = revokedAt.get(id);
      const expiry = expiresAt.get(id);
      const req = requests[i];
      if (revoked !== undefined && revoked < seq) {
        violations.push({
          check: 'inside a live grant',
          detail: `request #${i} ${req?.method} ${req?.path}: intent seq ${seq} uses grant ${id}, revoked at seq ${revoked}`,
        });
      }
      if (expiry !== undefined && Date.parse(intent.ts) >= expiry) {
        violations.push({
          check: 'inside a live grant',
          detail: `request #${i} ${req?.method} ${req?.path}: intent seq ${seq} at ${intent.ts} uses grant ${id}, expired ${new Date(expiry).toISOString()}`,
        });
      }
    }
  }
  return violations;
}

/**
 * Every intent was followed by exactly one outcome with its correlation id (nothing
 * hung, nothing was left half-recorded once the daemon drained), and no outcome is an
 * unexpected internal error.
 */
export function intentsWithoutOutcome(records: readonly AuditLine[]): string[] {
  const outcomes = new Map<string, AuditLine[]>();
  for (const r of records) {
    if (r.event !== 'outcome' || typeof r.correlation_id !== 'string') continue;
    outcomes.set(r.correlation_id, [...(outcomes.get(r.correlation_id) ?? []), r]);
  }
  const problems: string[] = [];
  for (const r of records) {
    if (r.event !== 'intent') continue;
    const id = String(r.correlation_id);
    const found = outcomes.get(id) ?? [];
    if (found.length !== 1)
      problems.push(`intent seq ${r.seq} (${String(r.tool)}) has ${found.length} outcomes`);
    for (const o of found)
      if (o.code === 'internal') problems.push(`outcome seq ${o.seq} is an internal error`);
  }
  return problems;
}
