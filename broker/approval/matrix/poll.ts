/**
 * The one-tap decision in an encrypted room: a poll (MSC3381) under each request, whose
 * answers approve everything asked for (with the default expiry) or deny. Posted with
 * the unstable event names Element sends and reads; votes are accepted under both the
 * unstable and the stable names.
 */
import { z } from 'zod';

export const POLL_START = 'org.matrix.msc3381.poll.start';
export const POLL_RESPONSE_TYPES: readonly string[] = [
  'org.matrix.msc3381.poll.response',
  'm.poll.response',
];
const TEXT = 'org.matrix.msc1767.text';

export type PollAnswer = 'approve' | 'deny';
const ANSWERS: readonly PollAnswer[] = ['approve', 'deny'];

export function pollContent(requestId: number): Record<string, unknown> {
  const question = `Request ${requestId}: approve all or deny?`;
  const answers = [
    { id: 'approve', [TEXT]: `Approve all (request ${requestId})` },
    { id: 'deny', [TEXT]: `Deny (request ${requestId})` },
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

/** The poll a vote answers and the one answer it chose, or undefined when malformed. */
export function parseVote(
  content: unknown,
): { poll: string; answer: PollAnswer | undefined } | undefined {
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
  const only = chosen.length === 1 ? chosen[0] : undefined;
  const answer = ANSWERS.find((a) => a === only);
  return { poll: c['m.relates_to'].event_id, answer };
}
