/**
 * What a search term may be, and what it matches. Pure; no I/O.
 *
 * A term is matched against file and folder **names** (never contents, never whole
 * paths): a name matches when it contains the term, ASCII letters compared without
 * case, every other character (accents included) exactly, both sides in Unicode NFC.
 * That is what Nextcloud does on SQLite; on MySQL (case- and accent-insensitive) and
 * PostgreSQL (Unicode case-insensitive) the server finds more, and the broker keeps
 * only what this rule matches, so the answer does not depend on the server's database.
 */
import { WALL_MAX_COMPONENT_BYTES } from './limits.js';
import { codePointName, CONTROL, INVISIBLE, LINE_SEPARATOR } from './text.js';

/** What matching means, in the words every search answer carries. */
export const NAME_MATCHING =
  'names only, never file contents: a name matches when it contains the query; ' +
  'ASCII letters ignore case, every other character (accents included) must be exact; ' +
  'both are compared in Unicode NFC';

export type SearchTermResult = { ok: true; term: string } | { ok: false; reason: string };

/**
 * Character rules for a term, checked on its NFC form: what would break a line, hide
 * a character or change meaning between us and Nextcloud.
 */
const TERM_RULES: readonly { readonly pattern: RegExp; readonly rule: string }[] = [
  // Security: controls split log and audit lines and reach the database as is.
  { pattern: CONTROL, rule: 'a control character (C0, DEL, C1, TAB, CR, LF or NUL)' },
  { pattern: LINE_SEPARATOR, rule: 'a line or paragraph separator (U+2028/U+2029)' },
  // Security: an invisible character makes a term look like another one in the audit log.
  {
    pattern: INVISIBLE,
    rule: 'an invisible or format character (zero width, bidi control, BOM, soft hyphen, variation selector)',
  },
  // An unassigned code point may normalise differently on the server.
  { pattern: /\p{Cn}/u, rule: 'an unassigned code point or noncharacter' },
];

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * The canonical form (NFC) of an agent's search term, or a one-line reason for refusing
 * it. Refused, never repaired: an empty or blank term, one over
 * `WALL_MAX_COMPONENT_BYTES` UTF-8 bytes (it could match no name the broker handles), a
 * `/` (a name holds none), lone surrogates and the characters of `TERM_RULES`.
 */
export function searchTerm(input: unknown): SearchTermResult {
  if (typeof input !== 'string') return { ok: false, reason: 'the query must be a string' };
  // Security: bound the work done on hostile input before normalising it.
  if (input.length > 4 * WALL_MAX_COMPONENT_BYTES)
    return { ok: false, reason: `the query is over ${WALL_MAX_COMPONENT_BYTES} UTF-8 bytes` };
  const surrogate = /\p{Cs}/u.exec(input);
  if (surrogate)
    return {
      ok: false,
      reason: `the query contains a lone surrogate: ${codePointName(surrogate[0])}`,
    };
  const term = input.normalize('NFC');
  if (term.trim() === '')
    return { ok: false, reason: 'the query is empty: send part of a name, e.g. "report"' };
  if (utf8Bytes(term) > WALL_MAX_COMPONENT_BYTES)
    return { ok: false, reason: `the query is over ${WALL_MAX_COMPONENT_BYTES} UTF-8 bytes` };
  for (const { pattern, rule } of TERM_RULES) {
    const hit = pattern.exec(term);
    if (hit) return { ok: false, reason: `the query contains ${rule}: ${codePointName(hit[0])}` };
  }
  if (term.includes('/'))
    return {
      ok: false,
      reason: 'the query contains "/": it matches within one name; search the folder instead',
    };
  return { ok: true, term };
}

/** ASCII letters to lower case; every other character as is. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** Whether `name` matches the canonical `term` (see the module comment). */
export function nameMatches(name: string, term: string): boolean {
  return asciiLower(name.normalize('NFC')).includes(asciiLower(term));
}
