/**
 * The text rules of the broker in one place: which characters count as control, line
 * separator, format or invisible; how an untrusted text is made visible (every escaper
 * writes a code point as `\u{XXXX}`); and HTML escaping. Pure functions, no I/O.
 *
 * Which escaper for which reader:
 * - `escapeForReason`: a one-line reason in an answer or audit line (agent-supplied
 *   paths and names): letters, digits, punctuation, symbols and the space pass.
 * - `escapeForDisplay`: what the approver reads in Matrix or on the console (below).
 * - `escapeMatching(text, CLASS)`: only the characters of one class, the rest as is
 *   (the console's announcements, the CLI's stderr).
 * - `escapeJsonLine`: a JSON text whose remaining invisible characters become `\uXXXX`.
 * - `asciiJson`: a JSON text in printable ASCII (the audit log's lines).
 *
 * `escapeForDisplay` is for the approver, who approves what they *see* of paths and
 * reasons the agent wrote. Security: it keeps printable ASCII and the letters, digits
 * and combining marks of real scripts, and writes every other code point as `\u{XXXX}`: controls, line breaks, bidi controls and other
 * invisible (Cf / default-ignorable) characters, non-ASCII spaces, punctuation and
 * symbols (this covers separator look-alikes such as `∕` and `／`), compatibility forms
 * (fullwidth letters, ligatures, superscripts: anything NFKC changes), private-use,
 * unassigned and surrogate code points, enclosing marks, a combining mark with no
 * letter before it, more than three marks in a row, and every mark of a text that is
 * not in NFC (so an NFD name cannot pass for its NFC twin). In a word that mixes Latin
 * letters with Cyrillic, Greek, Armenian or Cherokee ones, the non-Latin letters are
 * escaped (`pаypal` with a Cyrillic `а`). `\` is always escaped so an escape can't be
 * faked, and in paths a backtick (it would end the code span) and a space at either end
 * or next to `/`. A path containing right-to-left letters gets U+200E marks around each
 * `/` so the display cannot reorder its components. The broker's own markers are
 * broken (`neutraliseMarkers`): the phrase `audit anchor` and the mention `@room`.
 * HTML is escaped after all that.
 * Not covered: a whole word in a look-alike script (`раураl` all Cyrillic).
 */

// ---- character classes ------------------------------------------------------------
// Non-global, so `.test` has no state; `escapeMatching` makes its own global copy.

const ASCII_CONTROL_CHARS = '\\u0000-\\u001f\\u007f';
/** C0 controls and DEL (U+0000–U+001F, U+007F): what config values must not hold. */
export const ASCII_CONTROL = new RegExp(`[${ASCII_CONTROL_CHARS}]`);
/** A whole text without `ASCII_CONTROL` (for schema `.regex`). */
export const FREE_OF_ASCII_CONTROL = new RegExp(`^[^${ASCII_CONTROL_CHARS}]*$`);
/** Every control character: C0, DEL and C1 (TAB, CR, LF and NUL included). */
export const CONTROL = /\p{Cc}/u;
/** Every control character except LF, which a multi-line text may hold. */
// eslint-disable-next-line no-control-regex
export const CONTROL_EXCEPT_LF = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/u;
/** What XML 1.0 does not allow in a document: C0 controls but TAB, LF, CR; U+FFFE, U+FFFF. */
// eslint-disable-next-line no-control-regex
export const NOT_XML_CHAR = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
/** Where a renderer may start a new line: LF, CR, VT, FF, NEL, U+2028, U+2029. */
export const LINE_BREAK = /[\n\r\v\f\u0085\u2028\u2029]/u;
/** U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR. */
export const LINE_SEPARATOR = /[\u2028\u2029]/u;
/** Control characters and line separators: what breaks a line, a header or a log. */
export const CONTROL_OR_LINE_SEPARATOR = /[\p{Cc}\u2028\u2029]/u;
/** Format (Cf) and default-ignorable characters: zero width, bidi controls, BOM, soft hyphen. */
export const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
/**
 * What can hide or reorder a text meant to be read (controls but LF, format characters,
 * line separators): a reason the owner judges must not hold any.
 */
// eslint-disable-next-line no-control-regex
export const HIDDEN_IN_TEXT = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u;
/** What repaints or reorders a terminal: controls, format characters, line separators. */
export const UNSAFE_ON_TERMINAL = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
/** What `JSON.stringify` leaves unescaped and a terminal would act on: DEL, C1, Cf, U+2028/9. */
export const UNESCAPED_BY_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/u;

// ---- escapers ---------------------------------------------------------------------

/** `U+200B`: a code point's name for a reason. */
export function codePointName(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** `\u{200B}`: a code point made visible (upper-case hex, at least `digits` digits). */
export function codePointEscape(ch: string, digits = 4): string {
  return `\\u{${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(digits, '0')}}`;
}

/** `text` with every character of the class `unsafe` written as `codePointEscape`. */
export function escapeMatching(text: string, unsafe: RegExp, digits = 4): string {
  const all = new RegExp(
    unsafe.source,
    unsafe.flags.includes('g') ? unsafe.flags : `${unsafe.flags}g`,
  );
  return text.replace(all, (ch) => codePointEscape(ch, digits));
}

/** `text` with every run of the class `unsafe` replaced by `replacement`. */
export function replaceRuns(text: string, unsafe: RegExp, replacement: string): string {
  return text.replace(
    new RegExp(`${unsafe.source}+`, `${unsafe.flags.replace('g', '')}g`),
    replacement,
  );
}

/** `\uXXXX` for each UTF-16 unit of `ch` (lower-case hex, as `JSON.stringify` writes them). */
function jsonUnitEscapes(ch: string): string {
  return Array.from(
    { length: ch.length },
    (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`,
  ).join('');
}

/** A JSON text with `UNESCAPED_BY_JSON` written as `\uXXXX` (per UTF-16 unit: it parses the same). */
export function escapeJsonLine(json: string): string {
  return json.replace(new RegExp(UNESCAPED_BY_JSON.source, 'gu'), jsonUnitEscapes);
}

/** Anything but printable ASCII (U+0020–U+007E), one UTF-16 unit at a time. */
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/g;

/**
 * A JSON text (as `JSON.stringify` writes it) in printable ASCII: every other UTF-16
 * unit becomes `\uXXXX`, so a surrogate pair becomes two escapes. It parses to the same
 * value. Security: no reader of the result, however it splits lines or renders text,
 * meets a line break (U+2028, U+2029, NEL), a terminal control or a bidi override.
 */
export function asciiJson(json: string): string {
  return json.replace(NOT_PRINTABLE_ASCII, jsonUnitEscapes);
}

/**
 * A one-line, printable rendering of untrusted text for reasons: letters, digits,
 * punctuation, symbols and the plain space pass; everything else becomes `\u{…}`.
 * At most `max` code points, then `…`.
 */
export function escapeForReason(value: unknown, max = 80): string {
  const text = typeof value === 'string' ? value : `<${typeof value}>`;
  let out = '';
  let count = 0;
  for (const ch of text) {
    if (count === max) return `${out}…`;
    count += 1;
    // Security: never echo controls, bidi or invisible characters into a reason.
    out += /^[\p{L}\p{N}\p{P}\p{S} ]$/u.test(ch) && ch !== '\\' ? ch : codePointEscape(ch);
  }
  return out;
}

const MAX_MARKS_IN_A_ROW = 3;
const LRM = '\u200E';

const LETTER_OR_NUMBER = /^[\p{L}\p{N}]$/u;
const NONSPACING_OR_SPACING_MARK = /^[\p{Mn}\p{Mc}]$/u;
const DEFAULT_IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
const LATIN = /^\p{Script=Latin}$/u;
const CONFUSABLE_WITH_LATIN =
  /^[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}]$/u;
const RIGHT_TO_LEFT =
  /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFE\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;

/** A non-ASCII letter or digit that is shown as itself (before context rules). */
function isPlainLetterOrNumber(ch: string): boolean {
  return LETTER_OR_NUMBER.test(ch) && !DEFAULT_IGNORABLE.test(ch) && ch.normalize('NFKC') === ch;
}

/** Letters of a Latin word that are look-alikes from another script. */
function mixedScriptLetters(chars: readonly string[]): Set<number> {
  const flagged = new Set<number>();
  let start = 0;
  const flush = (end: number): void => {
    const word = chars.slice(start, end);
    if (word.some((c) => LATIN.test(c)) && word.some((c) => CONFUSABLE_WITH_LATIN.test(c))) {
      for (let i = start; i < end; i++) {
        if (CONFUSABLE_WITH_LATIN.test(chars[i] ?? '')) flagged.add(i);
      }
    }
    start = end + 1;
  };
  chars.forEach((c, i) => {
    if (!/^[\p{L}\p{M}]$/u.test(c)) flush(i);
  });
  flush(chars.length);
  return flagged;
}

/** `audit anchor`, in any case, with any run of spaces between the words. */
const ANCHOR_PHRASE = /(audit)( +)(anchor)/giu;
/** `@room`, in any case: what Matrix clients and push rules read as "notify everyone". */
const ROOM_MENTION = /@(?=room)/giu;

/**
 * The broker's own markers, made unreadable as such in agent text (already escaped by
 * `escapeForDisplay`, so the escapes below cannot be forged: an agent's `\` is shown as
 * `\u{005C}`).
 *
 * Security: the room is where the broker posts its audit anchors, one line each,
 * `audit anchor SEQ:HASH` (broker/audit/anchor-text.ts), which the owner copies to
 * `broker audit verify --anchor`; a reason holding that phrase would be a second
 * "anchor" pinning a history the agent chose. So the space between the words is shown
 * as `\u{0020}`. And `@room` in a message notifies every member of the room (the
 * legacy push rule matches the body): its `@` is shown as `\u{0040}`.
 */
function neutraliseMarkers(display: string): string {
  return display
    .replace(ANCHOR_PHRASE, (_, audit: string, spaces: string, anchor: string) => {
      return `${audit}${codePointEscape(' ').repeat(spaces.length)}${anchor}`;
    })
    .replace(ROOM_MENTION, codePointEscape('@'));
}

/**
 * Makes every character of an agent-supplied text visible (see the module comment).
 * `path: true` also escapes backticks and spaces at the edges of components.
 */
export function escapeForDisplay(text: string, opts: { path?: boolean } = {}): string {
  const path = opts.path === true;
  const chars = Array.from(text);
  const nfc = text.normalize('NFC') === text;
  const confusable = mixedScriptLetters(chars);
  let out = '';
  let marks = 0;
  let baseBefore = false;
  chars.forEach((ch, i) => {
    let keep: boolean;
    if (ch === ' ') {
      const edge =
        i === 0 || i === chars.length - 1 || chars[i - 1] === '/' || chars[i + 1] === '/';
      keep = !(path && edge);
    } else if (/^[\x21-\x7e]$/.test(ch)) {
      keep = ch !== '\\' && !(path && ch === '`');
    } else if (NONSPACING_OR_SPACING_MARK.test(ch)) {
      keep = nfc && baseBefore && marks < MAX_MARKS_IN_A_ROW && !DEFAULT_IGNORABLE.test(ch);
    } else {
      keep = isPlainLetterOrNumber(ch) && !confusable.has(i);
    }
    const isMark = NONSPACING_OR_SPACING_MARK.test(ch);
    marks = isMark && keep ? marks + 1 : 0;
    baseBefore = keep && (isMark || LETTER_OR_NUMBER.test(ch));
    out += keep ? ch : codePointEscape(ch);
  });
  out = neutraliseMarkers(out);
  if (path && RIGHT_TO_LEFT.test(out)) {
    // Security: `/` between two right-to-left words takes their direction, so
    // `a/אב/גד` would display with its last two components swapped. A left-to-right
    // mark on each side pins every separator, and the components, in order.
    out = `${LRM}${out.split('/').join(`${LRM}/${LRM}`)}${LRM}`;
  }
  return out;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
