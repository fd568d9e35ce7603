/**
 * Text the approver reads: the spans every message is built from, times, grant lines
 * and notices. Shared by the Matrix gateway (`html` for `formatted_body`, `plain` for
 * `body`) and the console. The request message is request-message.ts, `status` is
 * status.ts, `show N` is views.ts.
 *
 * Security: the owner approves what they *see*, and paths and reasons come from the
 * agent, so every agent-supplied span passes `escapeForDisplay` (base/text.ts: what it
 * keeps and what it escapes), then HTML escaping for `formatted_body`. Agent spans are
 * capped (shown.ts) unless marked `full`, which only `show N` uses.
 */
import type { GrantRecord, Kind, Mode, RequestRecord } from '../base/domain.js';
import { collectionWord, DEFAULT_KIND, isCollectionKind, knownCollection } from '../base/kinds.js';
import { escapeForDisplay, escapeHtml } from '../base/text.js';
import { iso } from '../base/time.js';
import { shownPath, shownText } from './shown.js';

/**
 * Fixed text of ours (trusted), agent text, an agent path (code), or emphasis (ours).
 * Agent text and paths are capped (shown.ts) unless `full`.
 */
export type Span =
  string | { text: string; full?: boolean } | { code: string; full?: boolean } | { strong: string };
export type Line = readonly Span[];
export interface Rendered {
  plain: string;
  html: string;
}

/** Agent text for one line: escaped, and cut to a readable length unless `full`. */
function agentText(text: string, full: boolean | undefined): string {
  if (full === true) return escapeForDisplay(text);
  const { shown, hidden } = shownText(text);
  return hidden === 0 ? shown : `${shown} (${hidden} more characters not shown)`;
}

/** An agent path: escaped, its middle left out when long unless `full`. */
function agentPath(path: string, full: boolean | undefined): string {
  return full === true ? escapeForDisplay(path, { path: true }) : shownPath(path).shown;
}

function spanPlain(span: Span): string {
  if (typeof span === 'string') return span;
  if ('text' in span) return agentText(span.text, span.full);
  if ('code' in span) return `\`${agentPath(span.code, span.full)}\``;
  return span.strong;
}

function spanHtml(span: Span): string {
  if (typeof span === 'string') return escapeHtml(span);
  if ('text' in span) return escapeHtml(agentText(span.text, span.full));
  if ('code' in span) return `<code>${escapeHtml(agentPath(span.code, span.full))}</code>`;
  return `<strong>${escapeHtml(span.strong)}</strong>`;
}

/** One line of spans, plain and HTML. */
export function renderLine(line: Line): Rendered {
  return { plain: line.map(spanPlain).join(''), html: line.map(spanHtml).join('') };
}

/** One message from lines of spans: plain text with `\n`, HTML with `<br>`. */
export function renderLines(lines: readonly Line[]): Rendered {
  const rendered = lines.map(renderLine);
  return {
    plain: rendered.map((l) => l.plain).join('\n'),
    html: rendered.map((l) => l.html).join('<br>'),
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

export const modeSpan = (mode: string): Span => (mode === 'write' ? { strong: 'write' } : 'read');

/**
 * What an item or grant is on, after its mode: `` `Documents` `` for files, and for the
 * other kinds the kind named first (base/kinds.ts) — calendar `personal`, address book
 * `z-server-generated--system` (the server's directory of every account), with what a
 * collection Nextcloud makes itself holds. Starts with its separating space.
 */
export function subjectSpans(
  item: { readonly kind?: Kind; readonly path: string },
  full?: boolean,
): Span[] {
  const code: Span = full === true ? { code: item.path, full } : { code: item.path };
  const kind = item.kind ?? DEFAULT_KIND;
  if (!isCollectionKind(kind)) return [' ', code];
  const known = knownCollection(kind, item.path);
  return [` ${collectionWord(kind)} `, code, ...(known === undefined ? [] : [` (${known})`])];
}

/** An item with its mode: read `Documents`, write calendar `personal`. */
export function itemSpans(
  item: { readonly kind?: Kind; readonly mode: Mode; readonly path: string },
  full?: boolean,
): Span[] {
  return [modeSpan(item.mode), ...subjectSpans(item, full)];
}

export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

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
    ...subjectSpans(grant),
    now === undefined ? '' : ` — ${formatTimeLeft(grant.expiresAt - now)} left`,
  ];
}

/** At most this many grant lines in one message; `show N` lists a request's items. */
export const MAX_GRANT_LINES = 20;

/**
 * Grant lines, at most `MAX_GRANT_LINES`, then one line naming the requests of the
 * rest, so a message stays readable (and under the homeserver's size limit) however
 * many grants there are.
 */
export function grantLines(grants: readonly GrantRecord[], now?: number): Line[] {
  const lines = grants.slice(0, MAX_GRANT_LINES).map((g) => grantLine(g, now));
  const rest = grants.slice(MAX_GRANT_LINES);
  if (rest.length > 0) {
    const requests = [...new Set(rest.map((g) => g.requestId))];
    lines.push([
      `… and ${plural(rest.length, 'more grant')} (request${requests.length === 1 ? '' : 's'} ${requests.join(', ')}): type "show N" to list a request's items.`,
    ]);
  }
  return lines;
}

/** An announcement that grants ended on their own (expired) or by the system. */
export function renderGrantsEnded(
  grants: readonly GrantRecord[],
  why: 'expired' | 'revoked',
): Rendered {
  return renderLines([
    [`${why === 'expired' ? 'Expired' : 'Revoked'}: ${plural(grants.length, 'grant')}.`],
    ...grantLines(grants),
  ]);
}

/** An announcement that pending requests ended without a decision. */
export function renderRequestsEnded(
  requests: readonly RequestRecord[],
  why: 'expired' | 'discarded',
): Rendered {
  const one = requests.length === 1;
  const because =
    why === 'expired'
      ? 'expired without a decision'
      : `${one ? 'was' : 'were'} discarded when the broker restarted`;
  return renderLines([
    [
      `Request${one ? '' : 's'} ${requests.map((r) => r.id).join(', ')} ${because}; nothing was granted. The agent may ask again.`,
    ],
  ]);
}
