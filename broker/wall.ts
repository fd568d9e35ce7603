/**
 * The wall (docs/contracts.md §1): the one pure function every agent-supplied path
 * passes before anything reaches Nextcloud.
 *
 * Allows: a path that is already unambiguous (NFC, `/`-separated, no leading slash
 * after dropping at most one) and that an active, unexpired grant of the same instance
 * covers component-wise (`A/B` covers `A/B` and `A/B/…`, never `A/BC` or `A`).
 * `write` implies `read`; `move` needs `write` on both ends; `list` and `search` need
 * `read` on the folder or the instance's `discovery` flag (names only).
 *
 * Denies, and never repairs: non-strings, empty paths, traversal (`.`/`..`), empty
 * components, backslashes, control and invisible characters, lone surrogates,
 * percent-escapes, separator look-alikes, padded names, trailing dots, reserved
 * Nextcloud namespaces and names, and over-long paths or components. Anything odd in
 * the inputs — unknown instance, a clock that is not a finite number, a grant that is
 * not canonical — denies (fail closed).
 *
 * Kinds (docs/contracts.md, "Resources beyond files"): a grant covers its own kind only.
 * A calendar or address book is named by one component, its URI name, and a grant on one
 * covers exactly that collection (never another whose name it is a prefix of, never one
 * known by its display name). `collection` reads (`read`) or adds to (`create`, which
 * needs `write`) one collection; `collections` lists the names of one kind: all of them
 * under discovery, otherwise only the granted ones.
 *
 * When nothing allows an operation, the refusal says why: `grant_revoked` or
 * `grant_expired` (with when) if a grant that ended would have allowed it, `no_grant`
 * only if none ever did. The caller passes the ended grants for that; an ended grant
 * never allows anything.
 *
 * No I/O, no clock, no state: the caller passes the grants and `now`.
 */
import type { CollectionKind, EndedGrantView, GrantView, Kind } from './base/domain.js';
import {
  collectionArgument,
  collectionWord,
  COLLECTION_WORDS,
  isCollectionKind,
  kindGrants,
  modeRefusal,
} from './base/kinds.js';
import { escapeForReason } from './base/text.js';
import { iso } from './base/time.js';
import { canonicalPath } from './wall/canonical.js';
import { coversCanonical, findEnding, findGrant, type GrantEnding } from './wall/lookup.js';

export { canonicalPath, type CanonicalResult } from './wall/canonical.js';
export type { GrantEnding } from './wall/lookup.js';

export type WallOp =
  | { op: 'list'; instance: string; path: unknown } // '' or '/' = instance root (discovery only)
  | { op: 'search'; instance: string; path: unknown } // the folder searched under; as list
  | { op: 'read'; instance: string; path: unknown }
  | { op: 'write'; instance: string; path: unknown } // mkdir, trash, upload, lock/unlock
  | { op: 'move'; instance: string; from: unknown; to: unknown }
  /** Read one calendar or address book, or create in a calendar (needs `write`). */
  | {
      op: 'collection';
      instance: string;
      kind: CollectionKind;
      name: unknown;
      access: 'read' | 'create';
    }
  /** The names of the calendars or address books: granted ones, or all under discovery. */
  | { op: 'collections'; instance: string; kind: CollectionKind };

export interface InstancePolicy {
  readonly discovery: boolean;
}

export type WallRefusalCode =
  | 'invalid_path'
  | 'unknown_instance'
  | 'no_grant'
  | 'grant_revoked'
  | 'grant_expired'
  | 'same_path';

export type WallDecision =
  | { ok: true; paths: string[]; grantIds: number[]; discovery: boolean }
  | { ok: false; code: WallRefusalCode; reason: string; ended?: GrantEnding };

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

/** The one-line reason of a refusal because the grant that covered `path` ended. */
export function endedReason(ending: GrantEnding, instance: string, path: string): string {
  const grant = `the ${ending.mode} grant #${ending.grant} on "${escapeForReason(instance, 40)}:${escapeForReason(ending.path)}"`;
  const covered = path === ending.path ? '' : ` (covering "${escapeForReason(path)}")`;
  return ending.state === 'revoked'
    ? `${grant}${covered} was revoked by the owner at ${iso(ending.at)}; request access again if you still need it`
    : `${grant}${covered} expired at ${iso(ending.at)}; grants never renew: request access again if you still need it`;
}

/** No live grant allows `mode` on `path`: say which grant ended, or that none ever covered it. */
function refuseUncovered(
  lookup: Lookup,
  mode: 'read' | 'write',
  path: string,
  hint: string,
  kind: Kind = 'files',
): WallDecision {
  const { grants, ended, instance, now } = lookup;
  const ending = findEnding(grants, ended, kind, instance, path, mode === 'write', now);
  if (ending === undefined) return noGrant(mode, instance, path, hint, kind);
  return {
    ok: false,
    code: ending.state === 'revoked' ? 'grant_revoked' : 'grant_expired',
    reason: endedReason(ending, instance, path),
    ended: ending,
  };
}

interface Lookup {
  readonly grants: readonly GrantView[];
  readonly ended: readonly EndedGrantView[];
  readonly instance: string;
  readonly now: number;
}

/** How a refusal names what was asked for: `"a/b"`, `calendar "personal"`. */
function named(kind: Kind, path: string): string {
  const quoted = `"${escapeForReason(path)}"`;
  return isCollectionKind(kind) ? `${collectionWord(kind)} ${quoted}` : quoted;
}

function noGrant(
  mode: 'read' | 'write',
  instance: string,
  path: string,
  hint: string,
  kind: Kind = 'files',
): WallDecision {
  return {
    ok: false,
    code: 'no_grant',
    reason: `no active ${mode} grant on "${escapeForReason(instance, 40)}" covers ${named(kind, path)}; ${hint}`,
  };
}

/** The one component a collection (a calendar, an address book) is named by, or why not. */
export function collectionName(
  value: unknown,
): { ok: true; name: string } | { ok: false; reason: string } {
  const c = canonicalPath(value);
  if (!c.ok) return c;
  // Security: one component, so a grant on `personal` can never cover `personal/…`, and
  // the name is exactly what the URL's last segment will be.
  if (c.path.includes('/'))
    return {
      ok: false,
      reason: `a ${COLLECTION_WORDS} is named by one component (its name as listed by collections), without "/"`,
    };
  return { ok: true, name: c.path };
}

function invalidPath(label: string, reason: string): WallDecision {
  return { ok: false, code: 'invalid_path', reason: `${label}: ${reason}` };
}

/**
 * The wall's decision on one operation. `grants` are the unended grants (any instance;
 * each is still checked here, expiry included), `policy` the instance's configuration
 * (undefined when the instance is unknown), `now` ms since the epoch, `ended` the grants
 * that were revoked or marked expired (they only ever name why nothing allows).
 */
export function decide(
  op: WallOp,
  grants: readonly GrantView[],
  policy: InstancePolicy | undefined,
  now: number,
  ended: readonly EndedGrantView[] = [],
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
  const lookup: Lookup = { grants, ended, instance, now };
  switch (op.op) {
    case 'read':
    case 'write': {
      const target = canonicalPath(op.path);
      if (!target.ok) return invalidPath('path', target.reason);
      const grant = findGrant(grants, 'files', instance, target.path, op.op === 'write', now);
      if (grant === undefined)
        return refuseUncovered(lookup, op.op, target.path, 'request access first');
      return { ok: true, paths: [target.path], grantIds: [grant.id], discovery: false };
    }
    case 'list':
    case 'search': {
      // Security: discovery (names only) is the owner's per-instance choice, never the agent's.
      // A search reveals the names below a folder, as listing each folder would: one rule.
      const discovery = policy.discovery === true;
      if (op.path === '' || op.path === '/') {
        // The instance root can never be granted; only discovery lists or searches it.
        if (discovery) return { ok: true, paths: [''], grantIds: [], discovery: true };
        return {
          ok: false,
          code: 'no_grant',
          reason: `the root of "${escapeForReason(instance, 40)}" can be ${op.op === 'list' ? 'listed' : 'searched'} only with discovery; request access to a folder`,
        };
      }
      const target = canonicalPath(op.path);
      if (!target.ok) return invalidPath('path', target.reason);
      const grant = findGrant(grants, 'files', instance, target.path, false, now);
      if (grant !== undefined) {
        return { ok: true, paths: [target.path], grantIds: [grant.id], discovery: false };
      }
      if (discovery) return { ok: true, paths: [target.path], grantIds: [], discovery: true };
      return refuseUncovered(lookup, 'read', target.path, 'request read access to the folder');
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
      const source = findGrant(grants, 'files', instance, from.path, true, now);
      if (source === undefined)
        return refuseUncovered(lookup, 'write', from.path, 'moving needs write on both paths');
      const destination = findGrant(grants, 'files', instance, to.path, true, now);
      if (destination === undefined)
        return refuseUncovered(lookup, 'write', to.path, 'moving needs write on both paths');
      return {
        ok: true,
        paths: [from.path, to.path],
        grantIds: [source.id, destination.id],
        discovery: false,
      };
    }
    case 'collection': {
      if (!isCollectionKind(op.kind))
        return { ok: false, code: 'no_grant', reason: 'unknown kind of collection' };
      const target = collectionName(op.name);
      if (!target.ok) return invalidPath(collectionArgument(op.kind), target.reason);
      const needWrite = op.access === 'create';
      const mode = needWrite ? 'write' : 'read';
      // Security: `create` needs write (creating events, never changing existing ones);
      // a kind never granted write (contacts) is never written.
      if (!kindGrants(op.kind, mode))
        return { ok: false, code: 'no_grant', reason: modeRefusal(op.kind, mode) };
      const grant = findGrant(grants, op.kind, instance, target.name, needWrite, now);
      if (grant === undefined)
        return refuseUncovered(
          lookup,
          mode,
          target.name,
          `request ${mode} access with kind "${op.kind}" and this name first`,
          op.kind,
        );
      return { ok: true, paths: [target.name], grantIds: [grant.id], discovery: false };
    }
    case 'collections': {
      if (!isCollectionKind(op.kind))
        return { ok: false, code: 'no_grant', reason: 'unknown kind of collection' };
      // Security: discovery shows every name (never contents); without it, only the
      // names the owner granted, each still checked as a live grant here.
      if (policy.discovery === true) return { ok: true, paths: [], grantIds: [], discovery: true };
      const live = new Map<string, number>();
      for (const grant of grants) {
        const name = collectionName(grant?.path);
        if (!name.ok || name.name !== grant.path || live.has(name.name)) continue;
        if (findGrant([grant], op.kind, instance, name.name, false, now) !== undefined)
          live.set(name.name, grant.id);
      }
      if (live.size === 0)
        return {
          ok: false,
          code: 'no_grant',
          reason: `no active grant of kind "${op.kind}" on "${escapeForReason(instance, 40)}"; request read access to one by its name (the owner can tell you the names, or turn on discovery)`,
        };
      const names = [...live.keys()].sort();
      return {
        ok: true,
        paths: names,
        grantIds: names.map((n) => live.get(n) as number),
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
