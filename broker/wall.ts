/**
 * The wall (DESIGN §3, Contract): the one pure function every agent-supplied path
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
import { WALL_MAX_COMPONENT_BYTES, WALL_MAX_PATH_BYTES } from './base/limits.js';
import { codePointName, CONTROL, escapeForReason, INVISIBLE, LINE_SEPARATOR } from './base/text.js';

export type CanonicalResult = { ok: true; path: string } | { ok: false; reason: string };

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

/** First components that name Nextcloud's own namespaces, compared case-folded after NFKC. */
const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  'trashbin',
  'files_trashbin',
  'files_versions',
  'uploads',
  'remote.php',
  'public.php',
  'ocs',
  'index.php',
]);

/**
 * Characters that look like a path separator but are not caught by the NFKC rule
 * (their NFKC form is themselves). The first seven are the Contract's list; the rest
 * are further solidus look-alikes.
 */
const SEPARATOR_LOOKALIKES =
  /[\u2215\u2044\u29F8\uFF0F\uFF3C\uFE68\u2216\u29F9\u2571\u2572\u27CB\u27CD\u244A\u2AFB\u2AFD\u1735]/u;

/**
 * Character rules, checked in order on the NFC form. NFC never turns a refused
 * character into an accepted one or hides one (none of these classes has a canonical
 * decomposition or composes with a neighbour), so checking the NFC form — the bytes
 * that are sent — is enough; a test walks every code point NFC changes to prove it.
 */
const CHARACTER_RULES: readonly { readonly pattern: RegExp; readonly rule: string }[] = [
  // Security: controls split log lines, terminate C strings (NUL) and confuse HTTP.
  { pattern: CONTROL, rule: 'a control character (C0, DEL, C1, TAB, CR, LF or NUL)' },
  // Security: U+2028/2029 break lines in JSON-in-JS, logs and chat messages.
  { pattern: LINE_SEPARATOR, rule: 'a line or paragraph separator (U+2028/U+2029)' },
  // Security: a backslash is a separator on other systems and in some decoders.
  { pattern: /\\/u, rule: 'a backslash' },
  // Security: look-alike slashes show a different path to the owner than is sent.
  { pattern: SEPARATOR_LOOKALIKES, rule: 'a separator look-alike' },
  // Security: invisible and bidi characters make two different names look identical.
  {
    pattern: INVISIBLE,
    rule: 'an invisible or format character (zero width, bidi control, BOM, soft hyphen, variation selector)',
  },
  // Security: an unassigned code point may gain a decomposition in a later Unicode
  // version, so Nextcloud's NFC of it could differ from ours.
  { pattern: /\p{Cn}/u, rule: 'an unassigned code point or noncharacter' },
  // Security: nothing is ever percent-decoded; refusing the look-alike removes every
  // double-decoding question (`%2F`, `%2E%2E`, `%00`).
  { pattern: /%[0-9A-Fa-f]{2}/u, rule: 'a percent-escape (% followed by two hex digits)' },
];

const WHITESPACE_EDGE = /^[\s\p{White_Space}]|[\s\p{White_Space}]$/u;
const NON_ASCII = /[\u0080-\u{10FFFF}]/u;
const SLASH = 0x2f;

function refuse(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

/** UTF-8 length of a well-formed string (lone surrogates are refused before this). */
function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i += 1) {
    const unit = s.charCodeAt(i);
    // A surrogate pair is 4 bytes: 2 for each half.
    bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

/** Case-insensitive spellings of a component: NFKC, then lower case both ways. */
function foldings(component: string): [string, string] {
  const compat = component.normalize('NFKC');
  return [compat.toLowerCase(), compat.toUpperCase().toLowerCase()];
}

function characterRefusal(path: string): string | null {
  for (const { pattern, rule } of CHARACTER_RULES) {
    const hit = pattern.exec(path);
    if (hit) {
      // One character is named by its code point; a percent-escape is shown as text.
      const shown =
        Array.from(hit[0]).length === 1 ? codePointName(hit[0]) : `"${escapeForReason(hit[0])}"`;
      return `path contains ${rule}: ${shown}`;
    }
  }
  if (NON_ASCII.test(path)) {
    for (const ch of path) {
      if (ch.charCodeAt(0) < 0x80) continue;
      const compat = ch.normalize('NFKC');
      // Security: a character that a compatibility-normalising layer would turn into a
      // separator or a dot segment must not reach a system that might apply NFKC.
      if (compat.includes('/') || compat.includes('\\') || compat === '.' || compat === '..') {
        return `path contains a separator look-alike: ${codePointName(ch)} (NFKC "${escapeForReason(compat)}")`;
      }
    }
  }
  return null;
}

function componentRefusal(component: string, index: number): string | null {
  // Built only when refusing: escaping costs more than the checks themselves.
  const where = (): string => `component ${index + 1} "${escapeForReason(component, 40)}"`;
  // Security: empty components hide a different path (`a//b`, trailing `/`).
  if (component === '')
    return `path has an empty component (${index + 1}): no "//" and no trailing "/"`;
  // Security: dot segments are traversal; the wall never resolves them.
  if (component === '.' || component === '..')
    return `path has a "${component}" component (traversal)`;
  if (utf8Length(component) > WALL_MAX_COMPONENT_BYTES) {
    return `${where()} is over ${WALL_MAX_COMPONENT_BYTES} UTF-8 bytes`;
  }
  // Security: padded and dot-terminated names look like other names, and some layers trim them.
  if (WHITESPACE_EDGE.test(component)) return `${where()} has leading or trailing whitespace`;
  if (component.endsWith('.')) return `${where()} ends with a dot`;
  for (const folded of foldings(component)) {
    // Security: Nextcloud refuses or treats specially .htaccess and upload part files.
    if (folded === '.htaccess' || folded.endsWith('.part') || folded.endsWith('.filepart')) {
      return `${where()} is a reserved name (.htaccess, *.part, *.filepart)`;
    }
    // Security: the first component must not name one of Nextcloud's own namespaces.
    if (index === 0 && RESERVED_NAMESPACES.has(folded)) {
      return `${where()} is a reserved Nextcloud namespace`;
    }
  }
  return null;
}

/**
 * The canonical form of an agent-supplied path, or a one-line reason for refusing it.
 * Canonical: no leading slash, components joined by `/`, NFC. The length limits apply
 * to the NFC form, because that is what is sent to Nextcloud.
 */
export function canonicalPath(input: unknown): CanonicalResult {
  if (typeof input !== 'string') return refuse(`path must be a string, not ${typeof input}`);
  if (input === '') return refuse('path is empty (the instance root cannot be named)');
  // Security: bound the work done on hostile input before normalising it. NFC shrinks
  // UTF-8 by at most 3× (Hangul L+V+T jamo), so this never refuses a path whose NFC
  // form would fit.
  if (input.length > 4 * WALL_MAX_PATH_BYTES)
    return refuse(`path is over ${WALL_MAX_PATH_BYTES} UTF-8 bytes`);
  // Security: a lone surrogate has no UTF-8 form; it cannot be compared or sent.
  const surrogate = /\p{Cs}/u.exec(input);
  if (surrogate) return refuse(`path contains a lone surrogate: ${codePointName(surrogate[0])}`);

  const nfc = input.normalize('NFC');
  const charProblem = characterRefusal(nfc);
  if (charProblem !== null) return refuse(charProblem);

  // One optional leading slash is accepted and dropped; a second one is an empty component.
  const path = nfc.charCodeAt(0) === SLASH ? nfc.slice(1) : nfc;
  if (path === '') return refuse('path is the instance root, which cannot be named');
  if (utf8Length(path) > WALL_MAX_PATH_BYTES)
    return refuse(`path is over ${WALL_MAX_PATH_BYTES} UTF-8 bytes`);

  const components = path.split('/');
  for (let i = 0; i < components.length; i += 1) {
    const problem = componentRefusal(components[i] as string, i);
    if (problem !== null) return refuse(problem);
  }
  return { ok: true, path };
}

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
