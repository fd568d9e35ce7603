import { z } from 'zod';
import { pending } from '../../base/envelope.js';
import { collectionAccess, COLLECTION_KINDS, collectionWord } from '../../base/kinds.js';
import { answer } from '../answer.js';
import {
  InstanceNameSchema,
  KindArgSchema,
  ModeArgSchema,
  PathArgSchema,
  envelopeSchema,
} from '../schemas.js';
import { ADDING_TOOL, type ToolRegistry } from '../tool.js';
import type { AgentToolDeps } from './deps.js';
import { newRequestStatus, requestStatusFields } from './request-status.js';

export const RequestAccessInputSchema = z.strictObject({
  instance: InstanceNameSchema,
  reason: z
    .string()
    .min(1)
    .max(500)
    .describe(
      'why you need this, in one or two sentences the owner can judge (max 500 characters)',
    ),
  items: z
    .array(
      z.strictObject({ kind: KindArgSchema.optional(), path: PathArgSchema, mode: ModeArgSchema }),
    )
    .min(1)
    .max(50)
    .describe(
      `1-50 items; each becomes its own grant if approved. ${COLLECTION_KINDS.map((k) => `A ${k} item names one ${collectionWord(k)} (${collectionAccess(k)})`).join('; ')}`,
    ),
});

/**
 * What request_access answers: the request it made, as check_access answers it (state
 * `pending`); or, awaited as an MCP task, check_access's answer for the request once the
 * owner decided (request-status.ts); or a refusal (too_many_pending lists the requests
 * that already wait, by number).
 */
export const RequestAccessOutputSchema = envelopeSchema({
  ...requestStatusFields,
  pending_requests: z.array(z.number().int()).optional(),
});

export function registerRequestAccess(registry: ToolRegistry, deps: AgentToolDeps): void {
  registry.add({
    name: 'request_access',
    title: 'Request access',
    description:
      'Ask the owner for access to files or folders, a calendar or an address book on one instance. You start with no access. ' +
      'The request goes to the owner for a human decision and answers "pending" with a request number; ' +
      'poll check_access with that number. A grant on a folder covers everything inside it; "write" includes read. ' +
      'A calendar or contacts grant covers exactly the one collection it names. ' +
      'Grants expire (typically after 24 h) and can be revoked at any time.',
    input: RequestAccessInputSchema,
    output: RequestAccessOutputSchema,
    annotations: ADDING_TOOL,
    handler: async (args, ctx) =>
      answer(await deps.requests.request(ctx, args), (record) =>
        pending(
          `request #${record.id} sent to the owner; call check_access with request ${record.id} to see the decision`,
          {
            ...newRequestStatus(record),
            hint: 'approval is a human decision and may take a while; do not send the same request again',
          },
        ),
      ),
  });
}
