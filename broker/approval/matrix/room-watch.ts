/**
 * Watches the approval room's state while the gateway runs. The room rules checked at
 * start (preflight.ts) can change later; a change that breaks them makes the channel
 * unavailable instead of silently continuing.
 */
import { z } from 'zod';
import type { Logger } from '../../base/log.js';
import { encryptedRoomMessage, encryptionRequired, notInviteOnlyMessage } from './preflight.js';

const JoinRulesSchema = z.object({ join_rule: z.string() });

export class RoomWatch {
  #encrypted = false;
  #joinRuleProblem: string | undefined;

  readonly #cfg: {
    room_id: string;
    approver: string;
    encryption?: 'required' | 'off' | undefined;
  };
  readonly #logger: Logger;

  constructor(
    cfg: {
      room_id: string;
      approver: string;
      encryption?: 'required' | 'off' | undefined;
    },
    logger: Logger,
  ) {
    this.#cfg = cfg;
    this.#logger = logger;
  }

  /** Why the room may not be used now, or undefined. */
  problem(): string | undefined {
    if (this.#encrypted) return encryptedRoomMessage(this.#cfg.room_id);
    return this.#joinRuleProblem;
  }

  onMembership(userId: string, membership: string): void {
    if (userId === this.#cfg.approver && membership !== 'join') {
      this.#logger.warn('the approver left the approval room; nobody can decide requests', {
        room: this.#cfg.room_id,
        membership,
      });
    } else if (userId !== this.#cfg.approver && membership === 'join') {
      this.#logger.warn(
        'someone joined the approval room: they can read every request, but cannot decide',
        { room: this.#cfg.room_id, user: userId },
      );
    }
  }

  onRoomState(type: 'm.room.encryption' | 'm.room.join_rules', content: unknown): void {
    const room = this.#cfg.room_id;
    if (type === 'm.room.encryption') {
      // An encrypted room is what `required` asks for.
      if (encryptionRequired(this.#cfg)) return;
      // Security: with encryption off the bot cannot read encrypted commands, and
      // encryption cannot be switched off again; stop offering the channel.
      this.#encrypted = true;
      this.#logger.error(encryptedRoomMessage(room));
      return;
    }
    const parsed = JoinRulesSchema.safeParse(content);
    const rule = parsed.success ? parsed.data.join_rule : 'unknown';
    if (rule === 'invite') {
      this.#joinRuleProblem = undefined;
      return;
    }
    // Security: requests show paths and reasons; a joinable room leaks them.
    this.#joinRuleProblem = notInviteOnlyMessage(room, rule);
    this.#logger.error(this.#joinRuleProblem);
  }
}
