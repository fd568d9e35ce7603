/**
 * The result envelope every operation answers with (docs/contracts.md §5): a `status`, a
 * one-line `message` naming the cause and the next action, and where relevant `code`,
 * `retry`, `hint`, `warnings`, `next`. The pipeline and its verbs build these; the
 * surfaces carry them (an MCP tool as JSON text in `content[0].text` and as
 * `structuredContent`, the blob endpoint as its JSON body). The shapes are declared in
 * protocol.ts, which the CLI reads them by; this file builds them.
 */
import type { Envelope, EnvelopeCode } from './protocol.js';

export { STATUSES } from './protocol.js';
export type { Envelope, EnvelopeCode, Status } from './protocol.js';

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

/** Adds warnings (if any) to an envelope. */
export function withWarnings(envelope: Envelope, warnings: readonly string[]): Envelope {
  if (warnings.length === 0) return envelope;
  return { ...envelope, warnings: [...(envelope.warnings ?? []), ...warnings] };
}
