/**
 * Text the approver reads: request messages, status, decision replies. Shared by the
 * Matrix gateway (`html` for `formatted_body`, `plain` for `body`) and the console.
 *
 * Security: the owner approves what they *see*, and paths and reasons come from the
 * agent, so every agent-supplied span passes `escapeForDisplay` (base/text.ts: what it
 * keeps and what it escapes), then HTML escaping for `formatted_body`.
 */
import type { GrantRecord, RequestRecord } from '../base/domain.js';
import { formatDuration } from '../config.js';
import { escapeForDisplay, escapeHtml } from '../base/text.js';
import { iso } from '../base/time.js';

/** Fixed text of ours (trusted), agent text, an agent path (code), or emphasis (ours). */
export type Span = string | { text: string } | { code: string } | { strong: string };
export type Line = readonly Span[];
export interface Rendered {
  plain: string;
  html: string;
}

const MAX_TEXT_CODE_POINTS = 300;

/** Agent text for one line: escaped, and cut to a readable length. */
function boundedText(text: string): string {
  const chars = Array.from(text);
  if (chars.length <= MAX_TEXT_CODE_POINTS) return escapeForDisplay(text);
  const shown = escapeForDisplay(chars.slice(0, MAX_TEXT_CODE_POINTS).join(''));
  return `${shown}… (${chars.length - MAX_TEXT_CODE_POINTS} more characters not shown)`;
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
  const text = iso(ms);
  return `${text.slice(0, 10)} ${text.slice(11, 16)} UTC`;
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
