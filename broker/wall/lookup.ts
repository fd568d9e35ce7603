/**
 * The wall's second half: which grant allows an operation on a canonical path, and,
 * when none does, which ended grant would have (so a refusal can say "revoked at T"
 * instead of "request access first"). Pure: no I/O, no clock, no state beyond a cache
 * of indexes of frozen lists.
 *
 * Security: an ended grant never allows anything; it only names why nothing does.
 */
import type { EndedGrantView, GrantView, Kind } from '../base/domain.js';
import { SLASH } from './canonical.js';

/** `grantPath` covers `path` component-wise; both must already be canonical. */
export function coversCanonical(grantPath: string, path: string): boolean {
  // Security: a prefix match must end at a component boundary (`A/B` never covers `A/BC`).
  return (
    path === grantPath ||
    (path.length > grantPath.length &&
      path.charCodeAt(grantPath.length) === SLASH &&
      path.startsWith(grantPath))
  );
}

/**
 * Whether one grant would allow `path` (canonical) on `instance`, leaving time aside:
 * same instance, enough mode, covering, well-formed. The index and the scan, for live
 * and ended grants alike, decide through this one function, so they cannot disagree.
 */
function fits(
  grant: GrantView,
  kind: Kind,
  instance: string,
  path: string,
  needWrite: boolean,
): boolean {
  // Cheap filters first: most grants are on other instances or paths.
  if (grant?.instance !== instance) return false;
  // Security: a grant covers its own kind only: a calendar grant never reaches files,
  // a files grant never a calendar. A view without a kind predates kinds: files.
  if ((grant.kind === undefined ? 'files' : grant.kind) !== kind) return false;
  if (grant.mode !== 'write' && (needWrite || grant.mode !== 'read')) return false;
  // Security: a grant whose path is not a string (an array would be coerced by
  // startsWith) or whose id is not an integer covers nothing. A grant path that is
  // not canonical cannot cover here either: `path` is canonical, and a run of its
  // leading whole components is itself canonical, so only a canonical grant path can
  // equal one (a property test generates hostile grants to hold this).
  if (typeof grant.path !== 'string' || !coversCanonical(grant.path, path)) return false;
  return Number.isSafeInteger(grant.id);
}

/** A time the broker can name: finite, and inside the range an ISO-8601 date can show. */
function isInstant(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && Math.abs(ms) <= 8.64e15;
}

/** Grants by instance, then by exact path: candidates for a path are its ancestors' entries. */
type GrantIndex = ReadonlyMap<string, ReadonlyMap<string, readonly GrantView[]>>;

/** Indexes of frozen grant lists; `null` marks a frozen list that holds a mutable grant. */
const indexes = new WeakMap<readonly GrantView[], GrantIndex | null>();

/**
 * An index for a frozen list of frozen grants, built once per list. A caller that keeps
 * one frozen snapshot of the grants (replaced whenever a grant changes) gets lookups
 * proportional to the path's depth instead of a scan of every grant.
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
    // are skipped below and refused by `fits` in a scan.)
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

/** The grants that may cover `path`: the index entries of it and its ancestors, or all. */
function pool<G extends GrantView>(grants: readonly G[], instance: string, path: string): G[] {
  const index = indexFor(grants);
  if (index === undefined) return grants as G[];
  const byPath = index.get(instance);
  const found: G[] = [];
  if (byPath === undefined) return found;
  for (let end = path.indexOf('/'); ; end = path.indexOf('/', end + 1)) {
    const entry = byPath.get(end === -1 ? path : path.slice(0, end));
    if (entry !== undefined) found.push(...(entry as readonly G[]));
    if (end === -1) return found;
  }
}

/**
 * The live grant that best allows `mode` on `path`: the latest expiry, then the lowest
 * id (deterministic). Every candidate, indexed or scanned, passes `fits` in full.
 */
export function findGrant(
  grants: readonly GrantView[],
  kind: Kind,
  instance: string,
  path: string,
  needWrite: boolean,
  now: number,
): GrantView | undefined {
  let best: GrantView | undefined;
  for (const grant of pool(grants, instance, path)) {
    if (!fits(grant, kind, instance, path, needWrite)) continue;
    // Security: expiry is exclusive (allowed only while now < expiresAt); NaN compares
    // false, a non-number is never coerced, and a grant that never expires (Infinity)
    // does not exist: every grant ends.
    if (!Number.isFinite(grant.expiresAt) || !(now < grant.expiresAt)) continue;
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

/** How a grant that would have allowed the operation ended. */
export interface GrantEnding {
  readonly grant: number;
  readonly request: number;
  readonly path: string;
  readonly mode: GrantView['mode'];
  readonly state: 'revoked' | 'expired';
  /** When: the revoke's instant, or the expiry's. */
  readonly at: number;
}

function endingOf(grant: GrantView, state: unknown, at: unknown): GrantEnding | undefined {
  if ((state !== 'revoked' && state !== 'expired') || !isInstant(at)) return undefined;
  return {
    grant: grant.id,
    request: grant.requestId,
    path: grant.path,
    mode: grant.mode,
    state,
    at,
  };
}

/**
 * When no live grant allows the operation: the most recently ended grant that would
 * have, from the unended grants already past their expiry and the ended ones (revoked,
 * or marked expired); the later ending wins, then the higher id. Undefined when no grant
 * ever covered the path with enough mode: that is `no_grant`.
 */
export function findEnding(
  grants: readonly GrantView[],
  ended: readonly EndedGrantView[],
  kind: Kind,
  instance: string,
  path: string,
  needWrite: boolean,
  now: number,
): GrantEnding | undefined {
  let best: GrantEnding | undefined;
  const consider = (ending: GrantEnding | undefined): void => {
    if (ending === undefined) return;
    if (
      best === undefined ||
      ending.at > best.at ||
      (ending.at === best.at && ending.grant > best.grant)
    ) {
      best = ending;
    }
  };
  for (const grant of pool(grants, instance, path)) {
    // An unended grant at or past its expiry has expired, even before the sweep marks it.
    if (fits(grant, kind, instance, path, needWrite) && !(now < grant.expiresAt)) {
      consider(endingOf(grant, 'expired', grant.expiresAt));
    }
  }
  for (const grant of pool(ended, instance, path)) {
    if (!fits(grant, kind, instance, path, needWrite)) continue;
    // An expired grant ended at its expiry (the sweep only noticed it later).
    consider(
      endingOf(grant, grant.state, grant.state === 'revoked' ? grant.endedAt : grant.expiresAt),
    );
  }
  return best;
}
