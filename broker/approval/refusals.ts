/**
 * What the owner is told when a decision changes nothing: why, and a next step that
 * works (an example command keeps the items the owner chose, so following it never
 * approves more than they asked for).
 */
import type { RequestRecord } from '../base/domain.js';
import { formatDuration } from '../config.js';
import type { DecideRefusal } from '../grants/index.js';
import type { Command } from './command.js';
import { formatInstant } from './format.js';
import { renderCommand } from './parser.js';

/** Why the store refused a decision (grants/requests.ts). */
export type DecideRefusalCode = DecideRefusal;

export interface RefusalContext {
  readonly lifecycle: { readonly default_grant: number; readonly max_grant: number };
}

function alreadyDecided(n: number, request: RequestRecord | undefined): string {
  if (request === undefined) return `Request ${n} was already decided; nothing changed.`;
  const by = request.decidedBy ? ` by ${request.decidedBy}` : '';
  const when = request.decidedAt === null ? '' : ` at ${formatInstant(request.decidedAt)}`;
  return `Request ${n} was already decided (${request.state.replace('_', ' ')}${by}${when}); nothing changed. Type "show ${n}" to see what it granted.`;
}

export function refusalText(
  n: number,
  code: DecideRefusalCode,
  request: RequestRecord | undefined,
  command: Command,
  ctx: RefusalContext,
): string {
  switch (code) {
    case 'unknown_request':
      return `There is no request ${n}; nothing changed. Type "status" to see the pending requests.`;
    case 'already_decided':
      return alreadyDecided(n, request);
    case 'expired':
      return `Request ${n} expired without a decision; nothing was granted. The agent can ask again.`;
    case 'bad_items': {
      const count = request?.items.length ?? 0;
      const asked = command.kind === 'approve' ? (command.items ?? []).join(',') : '';
      return `Request ${n} has items 1 to ${count}; "${asked}" does not fit. Nothing was granted.`;
    }
    case 'bad_duration':
      return `The expiry must be a positive whole duration (check lifecycle in the config); nothing was granted.`;
    case 'expiry_above_max': {
      const { default_grant, max_grant } = ctx.lifecycle;
      const asked =
        command.kind === 'approve' && command.durationMs !== undefined
          ? command.durationMs
          : default_grant;
      // The example keeps the owner's item choice: "approve 4 1,2 7d", never "approve 4 7d".
      const example =
        command.kind === 'approve'
          ? renderCommand({ ...command, durationMs: max_grant })
          : `approve ${n} ${formatDuration(max_grant)}`;
      return `The expiry ${formatDuration(asked)} is above the maximum of ${formatDuration(max_grant)}; nothing was granted. Use a shorter one, e.g. "${example}".`;
    }
  }
}
