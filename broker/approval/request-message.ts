/**
 * The message the approver decides on: number, instance, reason, the items broadest
 * first, what write allows, how to decide, and when it expires. Readable on a phone:
 * short lines, numbered, and short overall.
 *
 * Security: however large the request (50 items of 3,000 bytes, a 500-character reason),
 * the message stays under `MAX_REQUEST_MESSAGE_CHARS`: each path and the reason are
 * capped (shown.ts), at most `MAX_ITEMS_SHOWN` items are listed, broadest first, so the
 * broad ones are never among those left out, and whatever is left out is counted and
 * points to `show N`, which shows everything. Each item keeps its own number, so
 * "approve N 1,3" means the items as numbered here.
 */
import type { RequestRecord } from '../base/domain.js';
import { formatDuration } from '../config.js';
import {
  formatTimeLeft,
  itemSpans,
  plural,
  renderLines,
  type Line,
  type Rendered,
} from './format.js';
import { broadestFirst, shownPath, shownText } from './shown.js';
import { DEFAULT_KIND, KIND_NAMES, kindWriteMeans } from '../base/kinds.js';

/** Items listed in a request message; the rest are counted and left to `show N`. */
export const MAX_ITEMS_SHOWN = 8;
/** The longest request message (plain text, characters), whatever the agent sent. */
export const MAX_REQUEST_MESSAGE_CHARS = 1800;

/** Says in the message what a write item on files allows (base/kinds.ts says it). */
export const WRITE_MEANS = kindWriteMeans(DEFAULT_KIND) ?? '';

const EXAMPLE_EXPIRY_MS = 8 * 3_600_000;

export interface RequestMessageOptions {
  /** Time left before the request expires undecided. */
  expiresIn: number;
  /** lifecycle.default_grant, shown as what "approve N" gives. */
  defaultGrant?: number;
  /** lifecycle.max_grant: the example expiry never exceeds it. */
  maxGrant?: number;
  /** Default true: offer 👍/👎 (Matrix). False where there are no reactions (the console). */
  reactions?: boolean;
}

function itemsHeader(request: RequestRecord): string {
  const count = request.items.length;
  if (count === 1) return 'Items (1):';
  const writes = request.items.filter((i) => i.mode === 'write').length;
  const modes =
    writes === count
      ? 'all write'
      : writes === 0
        ? 'all read'
        : `${writes} write, ${count - writes} read`;
  return `Items (${count}: ${modes}), broadest first:`;
}

function howToDecide(request: RequestRecord, opts: RequestMessageOptions): Line[] {
  const n = request.id;
  const count = request.items.length;
  const grant = opts.defaultGrant === undefined ? '' : formatDuration(opts.defaultGrant);
  // Suggest only what works: an example expiry above max_grant would be refused.
  const example = formatDuration(Math.min(EXAMPLE_EXPIRY_MS, opts.maxGrant ?? EXAMPLE_EXPIRY_MS));
  const some = `approve ${n} ${count > 1 ? '1,2 ' : ''}${example}`;
  const all = count > 1 ? ` ${count} items` : '';
  if (opts.reactions === false) {
    const what = [count > 1 ? `all ${count} items` : 'all items', ...(grant === '' ? [] : [grant])];
    return [[`Type "approve ${n}" (${what.join(', ')}), "${some}", "deny ${n}" or "show ${n}".`]];
  }
  return [
    [`👍 approve all${all}`, grant === '' ? '' : ` (${grant})`, ' · 👎 deny'],
    [`Or type: approve ${n} · ${some} · deny ${n} · show ${n}`],
  ];
}

export function renderRequest(request: RequestRecord, opts: RequestMessageOptions): Rendered {
  const n = request.id;
  const ordered = broadestFirst(request.items);
  const listed = ordered.slice(0, MAX_ITEMS_SHOWN);
  const left = ordered.length - listed.length;
  const shortened =
    shownText(request.reason).hidden > 0 || listed.some((i) => shownPath(i.path).hidden > 0);
  const lines: Line[] = [
    [{ strong: `Request ${n}` }, ' · instance ', { text: request.instance }],
    ['Reason: ', { text: request.reason }],
    [itemsHeader(request)],
    ...listed.map((item): Line => [`${item.n}. `, ...itemSpans(item)]),
  ];
  if (left > 0) {
    lines.push([`… and ${plural(left, 'more item')}: type "show ${n}" to see every item.`]);
  } else if (shortened) {
    lines.push([`Shortened above: type "show ${n}" to see the request in full.`]);
  }
  // What write means for each kind asked for in write, in the table's order.
  for (const kind of KIND_NAMES) {
    const means = kindWriteMeans(kind);
    if (means !== undefined && request.items.some((i) => i.mode === 'write' && i.kind === kind))
      lines.push([means]);
  }
  lines.push(...howToDecide(request, opts));
  lines.push([`Undecided, it expires in ${formatTimeLeft(opts.expiresIn)}.`]);
  return renderLines(lines);
}
