/**
 * The result envelope every tool returns (DESIGN §7, Contract): a `status`, a one-line
 * `message` naming the cause and the next action, and where relevant `code`, `retry`,
 * `hint`, `warnings`, `next`. The same object travels as compact JSON text in
 * `content[0].text` and as `structuredContent`.
 */
import { z } from 'zod';

export const STATUSES = ['ok', 'refused', 'error', 'pending'] as const;
export type Status = (typeof STATUSES)[number];

/** Stable codes a client may branch on. The CLI maps `conflict` to exit 5. */
export type EnvelopeCode =
  // refused: the wall, the grant or the request said no; do not retry as is
  | 'invalid_arguments'
  | 'invalid_path'
  | 'unknown_instance'
  | 'no_grant'
  | 'same_path'
  | 'grant_ended'
  | 'audit_unavailable'
  | 'unknown_request'
  | 'permission'
  | 'not_found'
  | 'not_a_file'
  | 'not_a_folder'
  | 'conflict'
  | 'locked'
  | 'trash_unavailable'
  | 'locking_unavailable'
  | 'ticket_invalid'
  | 'lock_token_unknown'
  | 'too_large'
  // error: infrastructure; `retry` says whether trying again later can help
  | 'approval_unavailable'
  | 'nextcloud_unavailable'
  | 'nextcloud_auth'
  | 'nextcloud_error'
  | 'insufficient_storage'
  | 'verification_failed'
  | 'aborted'
  | 'internal';

export interface Envelope {
  status: Status;
  message: string;
  code?: EnvelopeCode;
  retry?: boolean;
  hint?: string;
  warnings?: string[];
  next?: string;
  correlation_id?: string;
  [field: string]: unknown;
}

/** The fields every envelope may carry; tools add their own (all optional). */
export const envelopeBaseShape = {
  status: z.enum(STATUSES),
  message: z.string(),
  code: z.string().optional(),
  retry: z.boolean().optional(),
  hint: z.string().optional(),
  warnings: z.array(z.string()).optional(),
  next: z.string().optional(),
  correlation_id: z.string().optional(),
};

/** A tool's output schema: the envelope plus its own optional result fields, strict. */
export function envelopeSchema<S extends z.ZodRawShape>(fields: S) {
  return z.strictObject({ ...envelopeBaseShape, ...fields });
}

export const BaseEnvelopeSchema = envelopeSchema({});

type Extra = Omit<Partial<Envelope>, 'status' | 'message'>;

export function ok(message: string, extra: Extra = {}): Envelope {
  return { status: 'ok', message, ...extra };
}

export function pending(message: string, extra: Extra = {}): Envelope {
  return { status: 'pending', message, ...extra };
}

export function refused(code: EnvelopeCode, message: string, extra: Extra = {}): Envelope {
  return { status: 'refused', message, code, ...extra };
}

export function failure(
  code: EnvelopeCode,
  message: string,
  retry: boolean,
  extra: Extra = {},
): Envelope {
  return { status: 'error', message, code, retry, ...extra };
}

/** The generic answer for anything unexpected: no detail crosses the wire. */
export function internalError(correlationId: string): Envelope {
  return failure(
    'internal',
    `internal error (correlation id ${correlationId}); the operation may not have run, check before retrying`,
    true,
    { correlation_id: correlationId },
  );
}

/** Drops undefined fields so the JSON text and structuredContent are identical. */
export function compact(envelope: Envelope): Envelope {
  const out: Envelope = { status: envelope.status, message: envelope.message };
  for (const [key, value] of Object.entries(envelope)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The MCP CallToolResult for an envelope. */
export function toToolResult(envelope: Envelope): {
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
} {
  const body = compact(envelope);
  const result = {
    content: [{ type: 'text' as const, text: JSON.stringify(body) }],
    structuredContent: body as Record<string, unknown>,
  };
  return envelope.status === 'error' ? { ...result, isError: true } : result;
}

/** Adds warnings (if any) to an envelope. */
export function withWarnings(envelope: Envelope, warnings: readonly string[]): Envelope {
  if (warnings.length === 0) return envelope;
  return { ...envelope, warnings: [...(envelope.warnings ?? []), ...warnings] };
}

/** Deep-scrubs every string in an audit or envelope value. */
export function scrubDeep<T>(value: T, scrub: (text: string) => string): T {
  if (typeof value === 'string') return scrub(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => scrubDeep(v, scrub)) as T;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrubDeep(v, scrub);
    return out as T;
  }
  return value;
}
