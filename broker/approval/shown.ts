/**
 * How much of the agent's text a message to the owner shows, and in which order.
 *
 * Security: an agent can send 50 items of 3,000 bytes each and a 500-character reason;
 * shown whole, the broad item and the reason scroll far off a phone's screen (or past
 * a homeserver's event size limit). So every shown path and reason is capped, measured
 * on what the owner reads (after `escapeForDisplay`, where one hidden character may be
 * shown as the eight characters `\u{202E}`):
 * - a path keeps its start and its end and says how much of the middle is left out:
 *   `Docs/Reports/2023…[2431 chars hidden]…/summary.md`. The start is a literal prefix of
 *   the path, so a grant is never broader than what is shown (a hidden middle only
 *   makes it deeper), and siblings (`Docs` and `Docs2`) differ in what is shown;
 * - a reason keeps its start and says how many characters follow;
 * - the `…` of the marker cannot come from the agent: `escapeForDisplay` writes an
 *   agent's own `…` (U+2026) as `\u{2026}`;
 * - a cut never splits an escape (`\u{202E}`) or a letter from its marks.
 * `show N` (views.ts) shows everything in full.
 *
 * Items are listed broadest first (`broadestFirst`), so what a cap leaves out is the
 * narrowest: write before read (only write can change or trash anything), then the
 * shallower path (a folder near the top holds more), then the item number.
 */
import type { Mode } from '../base/domain.js';
import { escapeForDisplay } from '../base/text.js';

/** Display characters of a path shown in a message: its start and its end. */
export const PATH_HEAD_SHOWN = 40;
export const PATH_TAIL_SHOWN = 32;
/** Display characters of a reason (or other agent text) shown in a message. */
export const TEXT_SHOWN = 280;

/** Left-to-right mark: kept around the marker in a right-to-left path (see text.ts). */
const LRM = '\u200E';
const ESCAPE = /\\u\{[0-9A-F]{4,6}\}/gu;
const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/**
 * The units of a displayed text that a cut must keep whole: an escape `\u{…}` (one
 * hidden character), or one grapheme (a letter with its marks).
 */
export function displayUnits(display: string): string[] {
  const units: string[] = [];
  let at = 0;
  const plain = (text: string): void => {
    for (const { segment } of graphemes.segment(text)) units.push(segment);
  };
  for (const m of display.matchAll(ESCAPE)) {
    plain(display.slice(at, m.index));
    units.push(m[0]);
    at = m.index + m[0].length;
  }
  plain(display.slice(at));
  return units;
}

/** The leading units of `units` whose total length stays within `max` characters. */
function take(units: readonly string[], max: number): number {
  let length = 0;
  let n = 0;
  for (const unit of units) {
    if (length + unit.length > max) break;
    length += unit.length;
    n += 1;
  }
  return n;
}

export interface Shown {
  /** What the message shows (already escaped). */
  readonly shown: string;
  /** How many characters (display units) were left out; 0 when shown whole. */
  readonly hidden: number;
}

const marker = (hidden: number): string => `…[${hidden} chars hidden]…`;

/** A path as a message shows it: escaped, its middle left out when it is long. */
export function shownPath(path: string): Shown {
  const display = escapeForDisplay(path, { path: true });
  if (display.length <= PATH_HEAD_SHOWN + PATH_TAIL_SHOWN) return { shown: display, hidden: 0 };
  const units = displayUnits(display);
  const head = take(units, PATH_HEAD_SHOWN);
  const tail = take([...units].reverse(), PATH_TAIL_SHOWN);
  const hidden = units.length - head - tail;
  if (hidden <= 0) return { shown: display, hidden: 0 };
  // An LRM-pinned (right-to-left) path keeps the marker pinned in place too.
  const pin = display.includes(LRM) ? LRM : '';
  const shown =
    units.slice(0, head).join('') +
    `${pin}${marker(hidden)}${pin}` +
    units.slice(units.length - tail).join('');
  return { shown, hidden };
}

/** Agent text (a reason) as a message shows it: escaped, cut after `TEXT_SHOWN`. */
export function shownText(text: string, max = TEXT_SHOWN): Shown {
  const display = escapeForDisplay(text);
  if (display.length <= max) return { shown: display, hidden: 0 };
  const units = displayUnits(display);
  const head = take(units, max);
  const hidden = units.length - head;
  return { shown: `${units.slice(0, head).join('')}…`, hidden };
}

interface Ranked {
  readonly n: number;
  readonly path: string;
  readonly mode: Mode;
}

const depth = (path: string): number => path.split('/').length;

/** Items broadest first (see the module comment); a new array, `items` is left as is. */
export function broadestFirst<T extends Ranked>(items: readonly T[]): T[] {
  return [...items].sort(
    (a, b) =>
      (a.mode === b.mode ? 0 : a.mode === 'write' ? -1 : 1) ||
      depth(a.path) - depth(b.path) ||
      a.n - b.n,
  );
}
