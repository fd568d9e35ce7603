/**
 * The wall's first half: the canonical form of an agent-supplied path, or a one-line
 * reason for refusing it (the rules are in the wall's module comment, broker/wall.ts).
 * Pure: no I/O, no clock, no state.
 */
import { WALL_MAX_COMPONENT_BYTES, WALL_MAX_PATH_BYTES } from '../base/limits.js';
import {
  codePointName,
  CONTROL,
  escapeForReason,
  INVISIBLE,
  LINE_SEPARATOR,
} from '../base/text.js';

export type CanonicalResult = { ok: true; path: string } | { ok: false; reason: string };

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
export const SLASH = 0x2f;

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
