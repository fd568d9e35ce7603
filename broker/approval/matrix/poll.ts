/**
 * The one-tap decision in an encrypted room: a poll (MSC3381) under each request, whose
 * answers approve everything asked for (with the default expiry) or deny. Posted with
 * the unstable event names Element sends and reads; votes are accepted under both the
 * unstable and the stable names.
 *
 * Each answer's id names the request and carries the nonce of its poll
 * (`approve-17-<32 hex digits>`), which only the encrypted poll holds (poll-nonces.ts):
 * a vote is bound to its request by what it encrypted, never by an event id.
 */
import { z } from 'zod';
import type { JsonObject } from '../../base/protocol.js';

export const POLL_START = 'org.matrix.msc3381.poll.start';
export const POLL_RESPONSE_TYPES: readonly string[] = [
  'org.matrix.msc3381.poll.response',
  'm.poll.response',
];
const TEXT = 'org.matrix.msc1767.text';

export type PollAnswer = 'approve' | 'deny';

/** 16 random bytes, as 32 lowercase hex digits. */
export const NONCE_BYTES = 16;
const ANSWER_ID = /^(approve|deny)-([1-9][0-9]{0,15})-([0-9a-f]{32})$/;

export function newNonce(randomBytes: (size: number) => Uint8Array): string {
  const bytes = randomBytes(NONCE_BYTES);
  if (bytes.length !== NONCE_BYTES)
    throw new Error('the random source gave the wrong number of bytes');
  return Buffer.from(bytes).toString('hex');
}

export function answerId(answer: PollAnswer, requestId: number, nonce: string): string {
  return `${answer}-${requestId}-${nonce}`;
}

/** What an answer id says, or undefined when it is not one of this broker's. */
export function parseAnswerId(
  id: string,
): { answer: PollAnswer; requestId: number; nonce: string } | undefined {
  const m = ANSWER_ID.exec(id);
  if (m === null) return undefined;
  const requestId = Number(m[2]);
  if (!Number.isSafeInteger(requestId)) return undefined;
  return { answer: m[1] as PollAnswer, requestId, nonce: m[3] as string };
}

export function pollContent(requestId: number, nonce: string): JsonObject {
  const question = `Request ${requestId}: approve all or deny?`;
  const answers = [
    { id: answerId('approve', requestId, nonce), [TEXT]: `Approve all (request ${requestId})` },
    { id: answerId('deny', requestId, nonce), [TEXT]: `Deny (request ${requestId})` },
  ];
  return {
    [POLL_START]: {
      question: { [TEXT]: question },
      kind: 'org.matrix.msc3381.poll.disclosed',
      max_selections: 1,
      answers,
    },
    [TEXT]: `${question}\n1. ${String(answers[0]?.[TEXT])}\n2. ${String(answers[1]?.[TEXT])}`,
  };
}

const SelectionSchema = z.object({ answers: z.array(z.string().max(64)).max(8) });
const PollResponseSchema = z.object({
  'm.relates_to': z.object({
    rel_type: z.literal('m.reference'),
    event_id: z.string().min(1).max(255),
  }),
  'org.matrix.msc3381.poll.response': SelectionSchema.optional(),
  'm.poll.response': SelectionSchema.optional(),
  'm.selections': z.array(z.string().max(64)).max(8).optional(),
});

/**
 * The poll a vote relates to and the one answer id it chose (undefined: none, or more
 * than one), or undefined when the content is not a vote.
 */
export function parseVote(
  content: unknown,
): { poll: string; answerId: string | undefined } | undefined {
  const parsed = PollResponseSchema.safeParse(content);
  if (!parsed.success) return undefined;
  const c = parsed.data;
  const chosen =
    c['org.matrix.msc3381.poll.response']?.answers ??
    c['m.poll.response']?.answers ??
    c['m.selections'] ??
    [];
  // A poll with one choice gets one answer; anything else (or none: a retracted vote)
  // decides nothing.
  return {
    poll: c['m.relates_to'].event_id,
    answerId: chosen.length === 1 ? chosen[0] : undefined,
  };
}
