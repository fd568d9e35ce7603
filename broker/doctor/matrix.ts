/**
 * Checks the Matrix approval room with the gateway's own preflight (the same rules it
 * enforces when it starts): the token is the bot's, the bot and the approver are
 * joined, the room is encrypted exactly when matrix.encryption is required, and is invite-only. Preflight stops at the first
 * problem; the steps after it are shown as not checked.
 */
import type { MatrixConfig } from '../config.js';
import { MatrixGatewayError, type MatrixGatewayErrorCode } from '../approval/matrix/errors.js';
import { preflight, type PreflightClient } from '../approval/matrix/preflight.js';
import { type Check, fail, pass, skip, warn } from './checklist.js';

type Step = 'token' | 'bot' | 'approver' | 'encryption' | 'join_rule';
const STEPS: readonly Step[] = ['token', 'bot', 'approver', 'encryption', 'join_rule'];

const STEP_OF_CODE: ReadonlyMap<MatrixGatewayErrorCode, Step> = new Map<
  MatrixGatewayErrorCode,
  Step
>([
  ['unreachable', 'token'],
  ['unauthorized', 'token'],
  ['wrong_user', 'token'],
  ['not_joined', 'bot'],
  ['approver_not_member', 'approver'],
  ['encrypted', 'encryption'],
  ['not_encrypted', 'encryption'],
  ['not_invite_only', 'join_rule'],
]);

function labels(cfg: MatrixConfig): Record<Step, string> {
  return {
    token: `homeserver ${cfg.homeserver} reachable, matrix.bot_token is ${cfg.bot_user}'s`,
    bot: `bot ${cfg.bot_user} joined to room ${cfg.room_id}`,
    approver: `approver ${cfg.approver} joined to room ${cfg.room_id}`,
    encryption:
      cfg.encryption === 'required'
        ? 'room is encrypted (matrix.encryption: required)'
        : 'room is not encrypted (matrix.encryption: off)',
    join_rule: 'room is invite-only (join rule "invite")',
  };
}

export async function checkMatrix(cfg: MatrixConfig, client: PreflightClient): Promise<Check[]> {
  const text = labels(cfg);
  // Which call preflight was making, to place a failure it does not classify.
  let current: Step = 'token';
  const tracked: PreflightClient = {
    whoami: () => {
      current = 'token';
      return client.whoami();
    },
    getJoinedRoomMembers: (room) => {
      current = 'bot';
      return client.getJoinedRoomMembers(room);
    },
    getStateEvent: (room, type, key) => {
      current = type === 'm.room.encryption' ? 'encryption' : 'join_rule';
      return client.getStateEvent(room, type, key);
    },
  };
  try {
    const { others } = await preflight(tracked, cfg);
    return [
      ...STEPS.map((s) => pass(text[s])),
      ...(others.length > 0
        ? [
            warn(
              `other members can read every request (they cannot decide): ${others.join(', ').slice(0, 300)}`,
              'remove them from the room if they should not see paths and reasons',
            ),
          ]
        : []),
    ];
  } catch (error) {
    const code = error instanceof MatrixGatewayError ? error.code : undefined;
    const failed = (code === undefined ? undefined : STEP_OF_CODE.get(code)) ?? current;
    const message = error instanceof Error ? error.message : 'unknown error';
    const at = STEPS.indexOf(failed);
    return STEPS.map((s, i) => {
      if (i < at) return pass(text[s]);
      if (i > at) return skip(`${text[s]}: not checked`);
      const [what, ...fixes] = message.split('; ');
      return fail(text[s], fixes.length > 0 ? fixes.join('; ') : 'check the matrix: section', what);
    });
  }
}
