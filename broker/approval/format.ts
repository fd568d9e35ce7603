/**
 * Text the approver reads: request messages, status, decision replies. Shared by the
 * Matrix gateway (`html` for `formatted_body`, `plain` for `body`) and the console.
 *
 * Security: the owner approves what they *see*, and paths and reasons come from the
 * agent. So every agent-supplied text passes `escapeForDisplay`, which keeps printable
 * ASCII and the letters, digits and combining marks of real scripts, and writes every
 * other code point as `\u{XXXX}`: controls, line breaks, bidi controls and other
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
 * `/` so the display cannot reorder its components. HTML is escaped after all that.
 * Not covered: a whole word in a look-alike script (`раураl` all Cyrillic).
 */
import type { GrantRecord, RequestRecord } from '../domain.js';
import { formatDuration } from '../config.js';

/** Fixed text of ours (trusted), agent text, an agent path (code), or emphasis (ours). */
export type Span = string | { text: string } | { code: string } | { strong: string };
export type Line = readonly Span[];
export interface Rendered {
  plain: string;
  html: string;
}

const MAX_MARKS_IN_A_ROW = 3;
const MAX_TEXT_CODE_POINTS = 300;
const LRM = '\u200E';

const LETTER_OR_NUMBER = /^[\p{L}\p{N}]$/u;
const NONSPACING_OR_SPACING_MARK = /^[\p{Mn}\p{Mc}]$/u;
const INVISIBLE = /^\p{Default_Ignorable_Code_Point}$/u;
const LATIN = /^\p{Script=Latin}$/u;
const CONFUSABLE_WITH_LATIN =
  /^[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}]$/u;
const RIGHT_TO_LEFT =
  /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFE\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;

function escapeCodePoint(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return `\\u{${cp.toString(16).toUpperCase().padStart(4, '0')}}`;
}

/** A non-ASCII letter or digit that is shown as itself (before context rules). */
function isPlainLetterOrNumber(ch: string): boolean {
  return LETTER_OR_NUMBER.test(ch) && !INVISIBLE.test(ch) && ch.normalize('NFKC') === ch;
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
      keep = nfc && baseBefore && marks < MAX_MARKS_IN_A_ROW && !INVISIBLE.test(ch);
    } else {
      keep = isPlainLetterOrNumber(ch) && !confusable.has(i);
    }
    const isMark = NONSPACING_OR_SPACING_MARK.test(ch);
    marks = isMark && keep ? marks + 1 : 0;
    baseBefore = keep && (isMark || LETTER_OR_NUMBER.test(ch));
    out += keep ? ch : escapeCodePoint(ch);
  });
  if (path && RIGHT_TO_LEFT.test(out)) {
    // Security: `/` between two right-to-left words takes their direction, so
    // `a/אב/גד` would display with its last two components swapped. A left-to-right
    // mark on each side pins every separator, and the components, in order.
    out = `${LRM}${out.split('/').join(`${LRM}/${LRM}`)}${LRM}`;
  }
  return out;
}

/** Agent text for one line: escaped, and cut to a readable length. */
function boundedText(text: string): string {
  const chars = Array.from(text);
  if (chars.length <= MAX_TEXT_CODE_POINTS) return escapeForDisplay(text);
  const shown = escapeForDisplay(chars.slice(0, MAX_TEXT_CODE_POINTS).join(''));
  return `${shown}… (${chars.length - MAX_TEXT_CODE_POINTS} more characters not shown)`;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function spanPlain(span: Span): string {
  if (typeof span === 'string') return span;
  if ('text' in span) return boundedText(span.text);
  if ('code' in span) return `\`${escapeForDisplay(span.code, { path: true })}\``;
  return span.strong;
}

function spanHtml(span: Span): string {
  if (typeof span === 'string') return escapeHtml(span);
  if ('text' in span) return escapeHtml(boundedText(span.text));
  if ('code' in span)
    return `<code>${escapeHtml(escapeForDisplay(span.code, { path: true }))}</code>`;
  return `<strong>${escapeHtml(span.strong)}</strong>`;
}

/** One message from lines of spans: plain text with `\n`, HTML with `<br>`. */
export function renderLines(lines: readonly Line[]): Rendered {
  return {
    plain: lines.map((l) => l.map(spanPlain).join('')).join('\n'),
    html: lines.map((l) => l.map(spanHtml).join('')).join('<br>'),
  };
}

/** `2h 14m`, `3d 4h`, `14m`, `45s`: time left, rounded down, two units at most. */
export function formatTimeLeft(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return '0s';
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return `${m}m`;
  return `${s}s`;
}

/** `2025-01-02 14:05 UTC`: an instant on the broker's clock, to the minute. */
export function formatInstant(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

const modeSpan = (mode: string): Span => (mode === 'write' ? { strong: 'write' } : 'read');

/**
 * The message the approver decides on. Readable on a phone: short lines, numbered.
 * `reactions` (default true): it offers 👍/👎 (Matrix) and the typed commands; false
 * where there are no reactions (the console): only the typed commands.
 */
export function renderRequest(
  request: RequestRecord,
  opts: { expiresIn: number; defaultGrant?: number; reactions?: boolean },
): Rendered {
  const n = request.id;
  const grant = opts.defaultGrant === undefined ? '' : formatDuration(opts.defaultGrant);
  const some = `approve ${n} ${request.items.length > 1 ? '1,2 ' : ''}8h`;
  const howToDecide: Line[] =
    opts.reactions === false
      ? [
          [
            `Type "approve ${n}" (all items${grant === '' ? '' : `, ${grant}`}), "${some}" or "deny ${n}".`,
          ],
        ]
      : [
          ['👍 approve all', grant === '' ? '' : ` (${grant})`, ' · 👎 deny'],
          [`Or type: approve ${n} · ${some} · deny ${n}`],
        ];
  const lines: Line[] = [
    [{ strong: `Request ${n}` }, ' · instance ', { text: request.instance }],
    ['Reason: ', { text: request.reason }],
    [`Items (${request.items.length}):`],
    ...request.items.map((item): Line => [
      `${item.n}. `,
      modeSpan(item.mode),
      ' ',
      { code: item.path },
    ]),
    ...howToDecide,
    [`Undecided, it expires in ${formatTimeLeft(opts.expiresIn)}.`],
  ];
  return renderLines(lines);
}

/**
 * One grant on one line: `• request 3 item 2: read personal `path` — 2h 14m left`.
 * Without `now` (a grant that just ended) the time left is left out.
 */
export function grantLine(grant: GrantRecord, now?: number): Line {
  return [
    `• request ${grant.requestId} item ${grant.itemNo}: `,
    modeSpan(grant.mode),
    ' ',
    { text: grant.instance },
    ' ',
    { code: grant.path },
    now === undefined ? '' : ` — ${formatTimeLeft(grant.expiresAt - now)} left`,
  ];
}

/** An announcement that grants ended on their own (expired) or by the system. */
export function renderGrantsEnded(
  grants: readonly GrantRecord[],
  why: 'expired' | 'revoked',
): Rendered {
  const n = grants.length;
  return renderLines([
    [`${why === 'expired' ? 'Expired' : 'Revoked'}: ${n} grant${n === 1 ? '' : 's'}.`],
    ...grants.map((g) => grantLine(g)),
  ]);
}

/** An announcement that pending requests ended without a decision. */
export function renderRequestsEnded(
  requests: readonly RequestRecord[],
  why: 'expired' | 'discarded',
): Rendered {
  const because =
    why === 'expired' ? 'expired without a decision' : 'were discarded when the broker restarted';
  return renderLines([
    [
      `Request${requests.length === 1 ? '' : 's'} ${requests.map((r) => r.id).join(', ')} ${because}; nothing was granted.`,
    ],
  ]);
}

export function renderStatus(input: {
  grants: readonly GrantRecord[];
  pending: readonly RequestRecord[] | undefined;
  now: number;
  pendingTimeout: number;
}): Rendered {
  const { grants, pending, now } = input;
  const lines: Line[] = [];
  lines.push([grants.length === 0 ? 'No active grants.' : `Active grants (${grants.length}):`]);
  for (const g of grants) lines.push(grantLine(g, now));
  if (pending !== undefined) {
    lines.push([
      pending.length === 0 ? 'No pending requests.' : `Pending requests (${pending.length}):`,
    ]);
    for (const r of pending) {
      const left = r.createdAt + input.pendingTimeout - now;
      lines.push([
        `• request ${r.id} · `,
        { text: r.instance },
        ` · ${r.items.length} item${r.items.length === 1 ? '' : 's'} — expires in ${formatTimeLeft(left)}`,
      ]);
    }
  }
  return renderLines(lines);
}
