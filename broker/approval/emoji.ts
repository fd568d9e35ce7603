/**
 * Reactions the approver may use on a request message, and nothing else:
 * 👍 approve all · 👎 deny · 🛇 revoke that request's grants · 📋 status.
 *
 * A reaction key is compared after removing the variation selectors U+FE0E/U+FE0F
 * and the skin-tone modifiers U+1F3FB–U+1F3FF, so 👍🏽, 👍️ and 👍︎ are 👍. Every other
 * difference is refused: ZWJ sequences, look-alikes (✋, 👌), shortcodes (`:+1:`),
 * surrounding text or whitespace.
 */
import type { Command } from './command.js';

export const APPROVE_KEY = '\u{1F44D}'; // 👍
export const DENY_KEY = '\u{1F44E}'; // 👎
export const REVOKE_KEY = '\u{1F6C7}'; // 🛇
export const STATUS_KEY = '\u{1F4CB}'; // 📋

/** The reactions a gateway pre-places on every request message, in this order. */
export const REACTION_KEYS: readonly string[] = [APPROVE_KEY, DENY_KEY, REVOKE_KEY, STATUS_KEY];

// Alternation, not one class: a class mixing selectors and modifiers reads as one emoji.
const PRESENTATION_AND_SKIN_TONE = /\u{FE0E}|\u{FE0F}|[\u{1F3FB}-\u{1F3FF}]/gu;

/** Drops presentation selectors and skin tones; keeps every other code point as is. */
export function normaliseEmoji(key: string): string {
  if (typeof key !== 'string') return '';
  return key.replace(PRESENTATION_AND_SKIN_TONE, '');
}

/**
 * The command a reaction stands for on the message of request `requestId`, or `null`
 * (not in the allow-list: ignore it). The gateway must already have checked the
 * sender, the room, and that the message is one the bot posted for this request.
 */
export function reactionCommand(key: string, requestId: number): Command | null {
  // Security: a request id that is not a positive safe integer cannot name a request.
  if (!Number.isSafeInteger(requestId) || requestId < 1) return null;
  // Security: exact match against the allow-list after normalisation; a key that
  // merely contains 👍 (a ZWJ sequence, text around it) is not 👍.
  switch (normaliseEmoji(key)) {
    case APPROVE_KEY:
      return { kind: 'approve', request: requestId };
    case DENY_KEY:
      return { kind: 'deny', request: requestId };
    case REVOKE_KEY:
      return { kind: 'revoke', target: { request: requestId } };
    case STATUS_KEY:
      return { kind: 'status' };
    default:
      return null;
  }
}
