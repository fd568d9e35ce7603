/**
 * `show N`: one request in full, for the owner to read before deciding (or after):
 * state, the whole reason, and every item in item order, each path escaped but never
 * shortened, with what became of it.
 *
 * Security: nothing is left out. A request can hold 50 paths of 3,000 bytes, more than
 * one Matrix event may carry (a homeserver refuses events over 64 KiB), so the answer
 * is split into as many messages as needed, each under `MESSAGE_BUDGET_BYTES` and
 * numbered "part k of n"; one item always fits in one message (the worst case, a
 * 3,000-byte path of characters that are each shown as an eight-character escape, is
 * tested), so no path is ever cut.
 */
import type { RequestItem, RequestRecord } from '../base/domain.js';
import {
  formatInstant,
  formatTimeLeft,
  itemSpans,
  plural,
  renderLine,
  type Line,
  type Rendered,
} from './format.js';

/**
 * The most one message may carry: the UTF-8 size of `{"body":…,"formatted_body":…}`.
 * Matrix refuses events over 65,536 bytes, and the homeserver adds the event's own
 * fields (ids, hashes, signatures) to what we send.
 */
export const MESSAGE_BUDGET_BYTES = 60_000;

/** What a message of ours costs against the budget. */
export function contentBytes(r: Rendered): number {
  return Buffer.byteLength(JSON.stringify({ body: r.plain, formatted_body: r.html }), 'utf8');
}

function decided(request: RequestRecord): string {
  const by = request.decidedBy === null ? '' : ` by ${request.decidedBy}`;
  const at = request.decidedAt === null ? '' : ` at ${formatInstant(request.decidedAt)}`;
  return `${by}${at}`;
}

function stateLine(request: RequestRecord, now: number, pendingTimeout: number): string {
  switch (request.state) {
    case 'pending': {
      const left = request.createdAt + pendingTimeout - now;
      return left > 0
        ? `pending, expires undecided in ${formatTimeLeft(left)}`
        : 'expired without a decision';
    }
    case 'approved':
      return `approved${decided(request)}`;
    case 'partially_approved':
      return `partially approved${decided(request)}`;
    case 'denied':
      return `denied${decided(request)}`;
    case 'expired':
      return 'expired without a decision';
    case 'discarded':
      return 'discarded when the broker restarted';
  }
}

function itemState(item: RequestItem, request: RequestRecord, now: number): string {
  if (request.state === 'pending') return 'waiting for your decision';
  const g = item.grant;
  if (g === null) return 'not granted';
  if (g.state === 'revoked') {
    return `granted, revoked${g.endedAt === null ? '' : ` at ${formatInstant(g.endedAt)}`}`;
  }
  if (g.state === 'expired' || g.expiresAt <= now) {
    return `granted, expired at ${formatInstant(g.expiresAt)}`;
  }
  return `granted until ${formatInstant(g.expiresAt)} (${formatTimeLeft(g.expiresAt - now)} left)`;
}

const join = (lines: readonly Rendered[]): Rendered => ({
  plain: lines.map((l) => l.plain).join('\n'),
  html: lines.map((l) => l.html).join('<br>'),
});

const suffix = (line: Rendered, text: string): Rendered => {
  const more = renderLine([text]);
  return { plain: line.plain + more.plain, html: line.html + more.html };
};

/**
 * `lines` packed into messages under the budget, in order, never dropping one. With
 * more than one message, the first line gets " (part 1 of n)" and every later message
 * starts with "`title` (part k of n):".
 */
export function pack(lines: readonly Rendered[], title: string): Rendered[] {
  const parts: Rendered[][] = [];
  let current: Rendered[] = [];
  // Room for the part header, added once the count is known.
  const budget = MESSAGE_BUDGET_BYTES - 200;
  for (const line of lines) {
    if (current.length > 0 && contentBytes(join([...current, line])) > budget) {
      parts.push(current);
      current = [];
    }
    current.push(line);
  }
  parts.push(current);
  const count = parts.length;
  if (count === 1) return [join(current)];
  return parts.map((part, i) => {
    const [first, ...rest] = part;
    if (first === undefined) return join(part);
    return i === 0
      ? join([suffix(first, ` (part 1 of ${count})`), ...rest])
      : join([renderLine([`${title} (part ${i + 1} of ${count}):`]), ...part]);
  });
}

/** `show N` for a request that exists: one or more messages, in order. */
export function renderShow(
  request: RequestRecord,
  ctx: { now: number; pendingTimeout: number },
): Rendered[] {
  const n = request.id;
  const lines: Line[] = [
    [
      { strong: `Request ${n}` },
      ' · instance ',
      { text: request.instance },
      ` · ${stateLine(request, ctx.now, ctx.pendingTimeout)}`,
    ],
    ['Reason: ', { text: request.reason, full: true }],
    [`${plural(request.items.length, 'item')}, in item order, each path in full:`],
    ...request.items.map((item): Line => [
      `${item.n}. `,
      ...itemSpans(item, true),
      ` — ${itemState(item, request, ctx.now)}`,
    ]),
  ];
  return pack(lines.map(renderLine), `Request ${n}, continued`);
}
