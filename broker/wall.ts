/**
 * The wall (docs/contracts.md §1): the one pure function every agent-supplied path
 * passes before anything reaches Nextcloud.
 *
 * Allows: a path that is already unambiguous (NFC, `/`-separated, no leading slash
 * after dropping at most one) and that an active, unexpired grant of the same instance
 * covers component-wise (`A/B` covers `A/B` and `A/B/…`, never `A/BC` or `A`).
 * `write` implies `read`; `move` needs `write` on both ends; `list` needs `read` on
 * the folder or the instance's `discovery` flag (names only).
 *
 * Denies, and never repairs: non-strings, empty paths, traversal (`.`/`..`), empty
 * components, backslashes, control and invisible characters, lone surrogates,
 * percent-escapes, separator look-alikes, padded names, trailing dots, reserved
 * Nextcloud namespaces and names, and over-long paths or components. Anything odd in
 * the inputs — unknown instance, a clock that is not a finite number, a grant that is
 * not canonical — denies (fail closed).
 *
 * No I/O, no clock, no state: the caller passes the grants and `now`.
 */
import type { GrantView } from './base/domain.js';
import { escapeForReason } from './base/text.js';
import { canonicalPath, SLASH } from './wall/canonical.js';

export { canonicalPath, type CanonicalResult } from './wall/canonical.js';

export type WallOp =
  | { op: 'list'; instance: string; path: unknown } // '' or '/' = instance root (discovery only)
  | { op: 'read'; instance: string; path: unknown }
  | { op: 'write'; instance: string; path: unknown } // mkdir, trash, upload, lock/unlock
  | { op: 'move'; instance: string; from: unknown; to: unknown };

export interface InstancePolicy {
  readonly discovery: boolean;
}

export type WallRefusalCode = 'invalid_path' | 'unknown_instance' | 'no_grant' | 'same_path';

export type WallDecision =
  | { ok: true; paths: string[]; grantIds: number[]; discovery: boolean }
  | { ok: false; code: WallRefusalCode; reason: string };

/** `grantPath` covers `path` component-wise; both must already be canonical. */
function coversCanonical(grantPath: string, path: string): boolean {
  // Security: a prefix match must end at a component boundary (`A/B` never covers `A/BC`).
  return (
    path === grantPath ||
    (path.length > grantPath.length &&
      path.charCodeAt(grantPath.length) === SLASH &&
      path.startsWith(grantPath))
  );
}

function isCanonical(value: unknown): value is string {
  const result = canonicalPath(value);
  return result.ok && result.path === value;
}

/**
 * Whether a grant on `grantPath` covers `path`: the same path or a descendant,
 * compared component-wise. False unless both are already canonical (so callers can
 * never match on an un-checked spelling, and the empty root is never covered).
 */
export function covers(grantPath: string, path: string): boolean {
  return isCanonical(grantPath) && isCanonical(path) && coversCanonical(grantPath, path);
}

/**
 * Whether one grant allows `path` (canonical) on `instance`: same instance, unexpired,
 * enough mode, covering, well-formed. The index and the scan both decide through this
 * one function, so they cannot disagree.
 */
function allows(
  grant: GrantView,
  instance: string,
  path: string,
  needWrite: boolean,
  now: number,
): boolean {
  // Cheap filters first: most grants are on other instances or paths.
  if (grant?.instance !== instance) return false;
  // Security: expiry is exclusive (allowed only while now < expiresAt); NaN compares
  // false, a non-number is never coerced, and a grant that never expires (Infinity)
  // does not exist: every grant ends.
  if (!Number.isFinite(grant.expiresAt) || !(now < grant.expiresAt)) return false;
  if (grant.mode !== 'write' && (needWrite || grant.mode !== 'read')) return false;
  // Security: a grant whose path is not a string (an array would be coerced by
  // startsWith) or whose id is not an integer covers nothing. A grant path that is
  // not canonical cannot cover here either: `path` is canonical, and a run of its
  // leading whole components is itself canonical, so only a canonical grant path can
  // equal one (a property test generates hostile grants to hold this).
  if (typeof grant.path !== 'string' || !coversCanonical(grant.path, path)) return false;
  return Number.isSafeInteger(grant.id);
}

/** Grants by instance, then by exact path: candidates for a path are its ancestors' entries. */
type GrantIndex = ReadonlyMap<string, ReadonlyMap<string, readonly GrantView[]>>;

/** Indexes of frozen grant lists; `null` marks a frozen list that holds a mutable grant. */
const indexes = new WeakMap<readonly GrantView[], GrantIndex | null>();

/**
 * An index for a frozen list of frozen grants, built once per list. A caller that keeps
 * one frozen snapshot of the active grants (replaced whenever a grant changes) gets
 * lookups proportional to the path's depth instead of a scan of every grant.
 */
function indexFor(grants: readonly GrantView[]): GrantIndex | undefined {
  // Security: only an immutable list can be indexed: a mutable one could lose a revoked
  // grant after the index was built, and the index would still offer it.
  if (!Object.isFrozen(grants)) return undefined;
  let index = indexes.get(grants);
  if (index === undefined) {
    index = buildIndex(grants);
    indexes.set(grants, index);
  }
  return index ?? undefined;
}

function buildIndex(grants: readonly GrantView[]): GrantIndex | null {
  const byInstance = new Map<string, Map<string, GrantView[]>>();
  for (const grant of grants) {
    // Security: a grant object that can still change could move away from its index
    // entry; such a list is scanned instead. (Primitives and null count as frozen; they
    // are skipped below and refused by `allows` in a scan.)
    if (!Object.isFrozen(grant)) return null;
    if (typeof grant?.instance !== 'string' || typeof grant.path !== 'string') continue;
    let byPath = byInstance.get(grant.instance);
    if (byPath === undefined) {
      byPath = new Map();
      byInstance.set(grant.instance, byPath);
    }
    const same = byPath.get(grant.path);
    if (same === undefined) byPath.set(grant.path, [grant]);
    else same.push(grant);
  }
  return byInstance;
}

/** Index entries for `path` and each of its ancestors (whole components only). */
function candidates(index: GrantIndex, instance: string, path: string): GrantView[] {
  const byPath = index.get(instance);
  const found: GrantView[] = [];
  if (byPath === undefined) return found;
  for (let end = path.indexOf('/'); ; end = path.indexOf('/', end + 1)) {
    const entry = byPath.get(end === -1 ? path : path.slice(0, end));
    if (entry !== undefined) found.push(...entry);
    if (end === -1) return found;
  }
}

/**
 * The grant that best allows `mode` on `path`: the latest expiry, then the lowest id
 * (deterministic). Every candidate, indexed or scanned, passes `allows` in full.
 */
function findGrant(
  grants: readonly GrantView[],
  instance: string,
  path: string,
  needWrite: boolean,
  now: number,
): GrantView | undefined {
  const index = indexFor(grants);
  const pool = index === undefined ? grants : candidates(index, instance, path);
  let best: GrantView | undefined;
  for (const grant of pool) {
    if (!allows(grant, instance, path, needWrite, now)) continue;
    if (
      best === undefined ||
      grant.expiresAt > best.expiresAt ||
      (grant.expiresAt === best.expiresAt && grant.id < best.id)
    ) {
      best = grant;
    }
  }
  return best;
}

function noGrant(
  mode: 'read' | 'write',
  instance: string,
  path: string,
  hint: string,
): WallDecision {
  return {
    ok: false,
    code: 'no_grant',
    reason: `no active ${mode} grant on "${escapeForReason(instance, 40)}" covers "${escapeForReason(path)}"; ${hint}`,
  };
}

function invalidPath(label: string, reason: string): WallDecision {
  return { ok: false, code: 'invalid_path', reason: `${label}: ${reason}` };
}

/**
 * The wall's decision on one operation. `grants` are the active grants (any instance;
 * each is still checked here), `policy` the instance's configuration (undefined when
 * the instance is unknown), `now` ms since the epoch.
 */
export function decide(
  op: WallOp,
  grants: readonly GrantView[],
  policy: InstancePolicy | undefined,
  now: number,
): WallDecision {
  // Security: only instances from the owner's configuration exist.
  if (policy === undefined) {
    return {
      ok: false,
      code: 'unknown_instance',
      reason: `unknown instance "${escapeForReason(op.instance, 40)}"; call list_instances`,
    };
  }
  // Security: without a usable clock no expiry can be checked; fail closed.
  if (!Number.isFinite(now)) {
    return { ok: false, code: 'no_grant', reason: 'the broker clock is not usable; refusing' };
  }
  const { instance } = op;
  switch (op.op) {
    case 'read':
    case 'write': {
      const target = canonicalPath(op.path);
      if (!target.ok) return invalidPath('path', target.reason);
      const grant = findGrant(grants, instance, target.path, op.op === 'write', now);
      if (grant === undefined) return noGrant(op.op, instance, target.path, 'request access first');
      return { ok: true, paths: [target.path], grantIds: [grant.id], discovery: false };
    }
    case 'list': {
      // Security: discovery (names only) is the owner's per-instance choice, never the agent's.
      const discovery = policy.discovery === true;
      if (op.path === '' || op.path === '/') {
        // The instance root can never be granted; only discovery lists it.
        if (discovery) return { ok: true, paths: [''], grantIds: [], discovery: true };
        return {
          ok: false,
          code: 'no_grant',
          reason: `the root of "${escapeForReason(instance, 40)}" can be listed only with discovery; request access to a folder`,
        };
      }
      const target = canonicalPath(op.path);
      if (!target.ok) return invalidPath('path', target.reason);
      const grant = findGrant(grants, instance, target.path, false, now);
      if (grant !== undefined) {
        return { ok: true, paths: [target.path], grantIds: [grant.id], discovery: false };
      }
      if (discovery) return { ok: true, paths: [target.path], grantIds: [], discovery: true };
      return noGrant('read', instance, target.path, 'request read access to the folder');
    }
    case 'move': {
      const from = canonicalPath(op.from);
      if (!from.ok) return invalidPath('from', from.reason);
      const to = canonicalPath(op.to);
      if (!to.ok) return invalidPath('to', to.reason);
      // Security: a rename that differs only in normalisation can make Nextcloud trash the
      // source (a MOVE without `Overwrite: F`); it is one name there anyway.
      if (from.path === to.path) {
        return {
          ok: false,
          code: 'same_path',
          reason: 'from and to are the same path once normalised (NFC); nothing to move',
        };
      }
      const source = findGrant(grants, instance, from.path, true, now);
      if (source === undefined)
        return noGrant('write', instance, from.path, 'moving needs write on both paths');
      const destination = findGrant(grants, instance, to.path, true, now);
      if (destination === undefined)
        return noGrant('write', instance, to.path, 'moving needs write on both paths');
      return {
        ok: true,
        paths: [from.path, to.path],
        grantIds: [source.id, destination.id],
        discovery: false,
      };
    }
    default: {
      // Security: an operation the wall does not know is refused, never guessed at.
      const unknown: never = op;
      return {
        ok: false,
        code: 'no_grant',
        reason: `unknown operation "${escapeForReason((unknown as { op: unknown }).op, 20)}"`,
      };
    }
  }
}
