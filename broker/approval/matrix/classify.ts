/**
 * Decides what a Matrix timeline event means to the broker, as a pure function of the
 * event and the gateway's configuration. No SDK, no I/O: the gateway turns an SDK
 * event into `IncomingEvent`, asks `classify`, and acts on the answer.
 *
 * Acts on, and only on, events in the configured room:
 * - from the approver's exact Matrix ID: an `m.reaction` annotation, an `m.text`
 *   message that is not an edit (reply fallback stripped), a redaction, a poll vote,
 *   and an edit (which the gateway refuses: an edit decides nothing);
 * - from anyone else: nothing (a command-shaped event is reported as `stranger` so the
 *   gateway can log and audit the attempt; the stranger is told nothing).
 * Everything else, including the bot's own events, is ignored.
 */
import { z } from 'zod';
import { normaliseEmoji, REACTION_KEYS } from '../emoji.js';
import { parseCommand } from '../parser.js';
import { parseVote, POLL_RESPONSE_TYPES } from './poll.js';

/** The fields of a timeline event the broker decides on. */
export interface IncomingEvent {
  readonly eventId: string;
  readonly roomId: string | undefined;
  readonly sender: string | undefined;
  readonly type: string;
  readonly content: unknown;
  /** Top-level `redacts` (room versions ≤ 10), for `m.room.redaction`. */
  readonly redacts?: string | undefined;
  /** For state events: the state key (for `m.room.member`, the user concerned). */
  readonly stateKey?: string | undefined;
}

export interface ClassifyContext {
  readonly roomId: string;
  readonly approver: string;
  readonly bot: string;
  /**
   * The content is a decrypted payload whose `m.relates_to` may be the homeserver's
   * (matrix-js-sdk copies the clear relation into a payload that has none): an edit is
   * then known by its `m.new_content` alone, which only the sender can have encrypted.
   */
  readonly relationsFromServer?: boolean;
}

export type Classified =
  | { kind: 'ignore'; why: IgnoreReason }
  | { kind: 'reaction'; target: string; key: string }
  | { kind: 'text'; body: string }
  | { kind: 'vote'; poll: string; answerId: string | undefined }
  /** An edit by the approver. `commandLike`: its new text (or a vote) would decide. */
  | { kind: 'edit'; commandLike: boolean; request: number | undefined }
  | { kind: 'redaction'; target: string }
  | { kind: 'membership'; userId: string; membership: string }
  | { kind: 'room_state'; stateType: 'm.room.encryption' | 'm.room.join_rules'; content: unknown }
  | {
      kind: 'stranger';
      sender: string;
      what: 'reaction' | 'text' | 'redaction' | 'vote';
      /** True when the approver sending the same would have been a command. */
      commandLike: boolean;
    };

export type IgnoreReason =
  | 'other_room'
  | 'own_event'
  | 'no_sender'
  | 'not_relevant'
  | 'edit'
  | 'not_text'
  | 'malformed'
  | 'not_annotation';

const MAX_KEY_LENGTH = 64;
const MAX_BODY_LENGTH = 4096;

const EventIdSchema = z.string().min(1).max(255);

const ReactionContentSchema = z.object({
  'm.relates_to': z.object({
    rel_type: z.string(),
    event_id: EventIdSchema,
    key: z.string().min(1).max(MAX_KEY_LENGTH),
  }),
});

const MessageContentSchema = z.object({
  msgtype: z.string(),
  body: z.string().max(MAX_BODY_LENGTH),
  'm.relates_to': z.object({ rel_type: z.string().optional() }).optional(),
  'm.new_content': z.unknown().optional(),
});

const RedactionContentSchema = z.object({ redacts: EventIdSchema.optional() });

const MemberContentSchema = z.object({ membership: z.string() });

// Note: these schemas are not `.strict()` on purpose. Matrix events legitimately carry
// extra keys (formatted_body, mentions, client-specific fields); we read only the keys
// named here and never pass the rest on.

/**
 * Removes the reply fallback: leading lines starting with `>` and the blank line after
 * them. Security: quoted text is someone else's words (perhaps a stranger's
 * "approve 3"); it must never be parsed as the approver's command.
 */
export function stripReplyFallback(body: string): string {
  const lines = body.split('\n');
  let i = 0;
  while (i < lines.length && (lines[i] ?? '').startsWith('>')) i += 1;
  if (i > 0 && i < lines.length && (lines[i] ?? '').trim() === '') i += 1;
  return lines.slice(i).join('\n');
}

const NewContentSchema = z.object({ 'm.new_content': z.unknown() });
const NewTextSchema = z.object({ body: z.string().max(MAX_BODY_LENGTH) });

/** Whether `content` replaces another event's (see ClassifyContext.relationsFromServer). */
function isEdit(content: unknown, ctx: ClassifyContext): boolean {
  const replaces = NewContentSchema.safeParse(content);
  if (replaces.success && replaces.data['m.new_content'] !== undefined) return true;
  if (ctx.relationsFromServer === true) return false;
  const parsed = MessageContentSchema.safeParse(content);
  return parsed.success && parsed.data['m.relates_to']?.rel_type === 'm.replace';
}

/** The approver's edit: would its new words decide something, and about which request? */
function classifyEdit(type: string, content: unknown): Extract<Classified, { kind: 'edit' }> {
  if (POLL_RESPONSE_TYPES.includes(type))
    return { kind: 'edit', commandLike: true, request: undefined };
  const replacement = (content as { 'm.new_content'?: unknown })['m.new_content'];
  const parsedText = NewTextSchema.safeParse(replacement ?? content);
  const text = parsedText.success
    ? stripReplyFallback(parsedText.data.body).replace(/^\* /, '')
    : '';
  const parsed = parseCommand(text);
  const command = parsed?.ok === true ? (parsed.command as { request?: unknown }) : {};
  return {
    kind: 'edit',
    commandLike: parsed !== null,
    request: typeof command.request === 'number' ? command.request : undefined,
  };
}

export function classify(ev: IncomingEvent, ctx: ClassifyContext): Classified {
  // Security: one room only; a command in any other room the bot shares is ignored.
  if (ev.roomId !== ctx.roomId) return { kind: 'ignore', why: 'other_room' };
  if (ev.sender === undefined || ev.sender === '') return { kind: 'ignore', why: 'no_sender' };
  if (ev.sender === ctx.bot) return { kind: 'ignore', why: 'own_event' };

  if (ev.type === 'm.room.member') {
    const parsed = MemberContentSchema.safeParse(ev.content);
    return parsed.success && ev.stateKey !== undefined && ev.stateKey !== ''
      ? { kind: 'membership', userId: ev.stateKey, membership: parsed.data.membership }
      : { kind: 'ignore', why: 'malformed' };
  }
  if ((ev.type === 'm.room.encryption' || ev.type === 'm.room.join_rules') && ev.stateKey === '') {
    return { kind: 'room_state', stateType: ev.type, content: ev.content };
  }

  // Security: the approver is compared by exact Matrix ID, never by display name.
  const fromApprover = ev.sender === ctx.approver;

  // Security: an edit changes words the broker may already have acted on; acting again
  // (or differently) on an edit would let history rewrite a decision. The approver's
  // is reported (the gateway refuses it); anyone else's is ignored like their other words.
  if (
    (ev.type === 'm.room.message' || POLL_RESPONSE_TYPES.includes(ev.type)) &&
    isEdit(ev.content, ctx)
  ) {
    return fromApprover ? classifyEdit(ev.type, ev.content) : { kind: 'ignore', why: 'edit' };
  }

  if (POLL_RESPONSE_TYPES.includes(ev.type)) {
    const vote = parseVote(ev.content);
    if (vote === undefined) return { kind: 'ignore', why: 'malformed' };
    if (!fromApprover)
      return { kind: 'stranger', sender: ev.sender, what: 'vote', commandLike: true };
    return { kind: 'vote', poll: vote.poll, answerId: vote.answerId };
  }

  switch (ev.type) {
    case 'm.reaction': {
      const parsed = ReactionContentSchema.safeParse(ev.content);
      if (!parsed.success) return { kind: 'ignore', why: 'malformed' };
      const rel = parsed.data['m.relates_to'];
      if (rel.rel_type !== 'm.annotation') return { kind: 'ignore', why: 'not_annotation' };
      if (!fromApprover) {
        const commandLike = REACTION_KEYS.includes(normaliseEmoji(rel.key));
        return { kind: 'stranger', sender: ev.sender, what: 'reaction', commandLike };
      }
      return { kind: 'reaction', target: rel.event_id, key: rel.key };
    }
    case 'm.room.message': {
      const parsed = MessageContentSchema.safeParse(ev.content);
      if (!parsed.success) return { kind: 'ignore', why: 'malformed' };
      // Notices are what bots send; answering them risks bot loops.
      if (parsed.data.msgtype !== 'm.text') return { kind: 'ignore', why: 'not_text' };
      const body = stripReplyFallback(parsed.data.body);
      if (!fromApprover) {
        const commandLike = parseCommand(body) !== null;
        return { kind: 'stranger', sender: ev.sender, what: 'text', commandLike };
      }
      return { kind: 'text', body };
    }
    case 'm.room.redaction': {
      const parsed = RedactionContentSchema.safeParse(ev.content ?? {});
      const target = ev.redacts ?? (parsed.success ? parsed.data.redacts : undefined);
      if (target === undefined || !EventIdSchema.safeParse(target).success) {
        return { kind: 'ignore', why: 'malformed' };
      }
      if (!fromApprover) {
        return { kind: 'stranger', sender: ev.sender, what: 'redaction', commandLike: false };
      }
      return { kind: 'redaction', target };
    }
    default:
      return { kind: 'ignore', why: 'not_relevant' };
  }
}
