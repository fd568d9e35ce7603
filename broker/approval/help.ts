/**
 * The answer to `help`, for the channel it is asked in: the typed commands everywhere,
 * the reactions only where they decide (a clear-text Matrix room), the poll and pairing
 * in an encrypted one, the owner's shell commands on the console, and the limits that
 * shape what the owner sees (the default and longest expiry, how many requests may wait
 * at once).
 */
import { formatDuration } from '../config.js';
import { WRITE_MEANS } from './request-message.js';

export interface HelpContext {
  /** True in Matrix (reactions on request messages); false on the console. */
  readonly reactions: boolean;
  /** An encrypted Matrix room: polls instead of reactions, and `pair CODE`. */
  readonly encrypted?: boolean | undefined;
  readonly lifecycle: {
    readonly default_grant: number;
    readonly max_grant: number;
    /** lifecycle.max_pending: how many requests may wait for the owner at once. */
    readonly max_pending?: number | undefined;
  };
}

export function helpText(ctx: HelpContext): string {
  const { default_grant, max_grant, max_pending } = ctx.lifecycle;
  const lines = [
    'Commands (N is the request number):',
    `  approve N           approve every item of request N (for ${formatDuration(default_grant)})`,
    '  approve N 1,3       approve only items 1 and 3',
    `  approve N 8h        approve with an expiry: s, m, h or d, at most ${formatDuration(max_grant)}`,
    '  approve N 1,3 8h    both',
    '  deny N              deny request N',
    '  deny all            deny every pending request',
    '  show N              request N in full: reason, every item, what was granted',
    '  revoke N            end the grants of request N',
    '  revoke <instance>   end every grant on that instance',
    '  revoke all          end every grant',
    '  status              active grants and pending requests',
    '  undo SEQ            take back what operation SEQ changed (its seq in the audit log)',
    '  undo --request N    take back everything done under the grants of request N, newest first',
    '                      add --dry-run to see what undo would do; it never deletes anything',
    '  help                this text',
    WRITE_MEANS,
  ];
  if (max_pending !== undefined) {
    lines.push(
      `At most ${max_pending} requests wait for you at once (lifecycle.max_pending); the agent's next one is refused until you decide, e.g. with "deny all".`,
    );
  }
  if (ctx.encrypted === true) {
    lines.push(
      '  pair CODE           pin the device you type this from; CODE is what "broker pair" shows on the broker\'s host',
      'Under each request a poll: Approve all or Deny. Reactions decide nothing in this encrypted room.',
      'On the broker\'s host: "broker pins" lists the pinned devices, "broker unpin DEVICE_ID" removes a paired one.',
    );
  } else if (ctx.reactions) {
    lines.push('Reactions on a request: 👍 approve all · 👎 deny · 🛇 revoke · 📋 status');
  } else {
    lines.push(
      'From another shell on this host: broker approve N, deny N, revoke N, undo SEQ, status, grants (and, with an encrypted Matrix room, broker pair, pins, unpin).',
    );
  }
  return lines.join('\n');
}
