/**
 * The answer to `status` (and the 📋 reaction): what is granted now and what waits for
 * the owner. One function per section, each turning the same `StatusInput` into lines,
 * so a new section (held checkout locks, the audit head) is one more function in
 * `STATUS_SECTIONS` and one more field in `StatusInput`.
 *
 * Security: pending requests show their items (escaped and capped like the request
 * message, broadest first), so the owner can judge them from `status` alone; what is
 * left out is counted and points to `show N`.
 */
import type { CheckoutLockRecord, GrantRecord, RequestRecord } from '../base/domain.js';
import {
  formatTimeLeft,
  grantLines,
  itemSpans,
  plural,
  renderLines,
  type Line,
  type Rendered,
  type Span,
} from './format.js';
import { broadestFirst } from './shown.js';

export interface StatusInput {
  readonly grants: readonly GrantRecord[];
  /** Undefined when the store cannot list them (the section is then left out). */
  readonly pending: readonly RequestRecord[] | undefined;
  readonly now: number;
  readonly pendingTimeout: number;
  /** Checkout locks not yet confirmed released (the section shows only when there are any). */
  readonly locks?: readonly CheckoutLockRecord[] | undefined;
  /** A closing line, such as the clear-text room warning. */
  readonly notice?: string | undefined;
}

export type StatusSection = (input: StatusInput) => Line[];

/** Items of each pending request listed in `status`; the rest are left to `show N`. */
export const STATUS_ITEMS_PER_REQUEST = 3;
/** Pending requests listed in `status`. */
export const STATUS_PENDING_LISTED = 10;

export function grantsSection({ grants, now }: StatusInput): Line[] {
  return [
    [grants.length === 0 ? 'No active grants.' : `Active grants (${grants.length}):`],
    ...grantLines(grants, now),
  ];
}

/**
 * A checkout lock the broker holds on Nextcloud: `• personal `Docs/a.txt` (request 3) —
 * locked, 2h 14m left`, or, while its release waits for Nextcloud, how that goes.
 */
export function lockLine(lock: CheckoutLockRecord, now: number): Line {
  const where: Span[] = ['• ', { text: lock.instance }, ' ', { code: lock.path }];
  if (lock.requestIds.length > 0) where.push(` (request ${lock.requestIds.join(', ')})`);
  if (lock.state === 'held')
    return [...where, ` — locked, ${formatTimeLeft(lock.lockExpiresAt - now)} left`];
  const next =
    lock.nextAttemptAt === null ? '' : `; next try in ${formatTimeLeft(lock.nextAttemptAt - now)}`;
  return [
    ...where,
    ` — being released (${lock.end ?? 'ended'}), ${lock.attempts} ${lock.attempts === 1 ? 'try' : 'tries'} so far${next}`,
    ...(lock.lastError === null ? [] : ['; last: ', { text: lock.lastError }]),
  ];
}

/** The checkout locks on Nextcloud, while there are any: what blocks the owner's writes. */
export function locksSection({ locks = [], now }: StatusInput): Line[] {
  if (locks.length === 0) return [];
  return [
    [`Checkout locks on Nextcloud (${locks.length}):`],
    ...locks.map((l) => lockLine(l, now)),
  ];
}

function pendingLines(request: RequestRecord, input: StatusInput): Line[] {
  const left = request.createdAt + input.pendingTimeout - input.now;
  const items = broadestFirst(request.items);
  const listed = items.slice(0, STATUS_ITEMS_PER_REQUEST);
  const lines: Line[] = [
    [
      `• request ${request.id} · `,
      { text: request.instance },
      ` · ${plural(request.items.length, 'item')} — expires in ${formatTimeLeft(left)}`,
    ],
    ...listed.map((item): Line => [`   ${item.n}. `, ...itemSpans(item)]),
  ];
  if (items.length > listed.length) {
    lines.push([`   … and ${items.length - listed.length} more: type "show ${request.id}"`]);
  }
  return lines;
}

export function pendingSection(input: StatusInput): Line[] {
  const { pending } = input;
  if (pending === undefined) return [];
  const listed = pending.slice(0, STATUS_PENDING_LISTED);
  const lines: Line[] = [
    [pending.length === 0 ? 'No pending requests.' : `Pending requests (${pending.length}):`],
    ...listed.flatMap((r) => pendingLines(r, input)),
  ];
  if (pending.length > listed.length) {
    const rest = pending.slice(listed.length).map((r) => r.id);
    lines.push([
      `… and ${plural(rest.length, 'more pending request')} (${rest.join(', ')}); "deny all" denies every pending request.`,
    ]);
  }
  return lines;
}

/** The closing notice, when there is one. */
export function noticeSection({ notice }: StatusInput): Line[] {
  return notice === undefined ? [] : [[notice]];
}

/** The sections of `status`, in order. */
export const STATUS_SECTIONS: readonly StatusSection[] = [
  grantsSection,
  locksSection,
  pendingSection,
  noticeSection,
];

export function renderStatus(
  input: StatusInput,
  sections: readonly StatusSection[] = STATUS_SECTIONS,
): Rendered {
  return renderLines(sections.flatMap((section) => section(input)));
}
