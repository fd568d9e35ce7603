/**
 * The broker's answers as the CLI reads them: a result envelope (docs/contracts.md §5)
 * and how a non-ok one maps to the CLI's exit codes (§6).
 */
import { STATUSES as ENVELOPE_STATUSES, type EnvelopeOf } from '../../../broker/base/protocol.js';
import type { TransferProtocolCode } from '../../../broker/base/transfer-tools.js';
import { CliError, type CliErrorCode } from './errors.js';
import { isObject, optionalString } from './json.js';

/**
 * A result envelope (docs/contracts.md §5) as the CLI reads it: a code of the transfer
 * protocol (broker/base/transfer-tools.ts), or any other a newer broker may send.
 */
export type Envelope = Readonly<EnvelopeOf<TransferProtocolCode | (string & {})>>;

/** Whether the envelope's code is one of `codes`: only codes the protocol answers with compile. */
const hasCode = (env: Envelope, ...codes: readonly TransferProtocolCode[]): boolean =>
  env.code !== undefined && (codes as readonly string[]).includes(env.code);

const STATUSES: ReadonlySet<unknown> = new Set(ENVELOPE_STATUSES);

/**
 * `value` as an envelope, or undefined when it is not one: a known status, and the fields
 * the CLI reads of the types it reads them as (a missing message is ''). Other fields
 * pass through for the command to read (a ticket's blob_url, size, etag).
 */
export function asEnvelope(value: unknown): Envelope | undefined {
  if (!isObject(value) || !STATUSES.has(value.status)) return undefined;
  const { message, code, retry, hint } = value;
  if (!optionalString(message) || !optionalString(code) || !optionalString(hint)) return undefined;
  if (retry !== undefined && typeof retry !== 'boolean') return undefined;
  return { ...value, message: message ?? '' } as Envelope;
}

/**
 * Refusals that a grant would change: the next step is to request access. Grant codes by
 * prefix, so one an older broker sent (`grant_ended`) or a later one is one too.
 */
const needsAccess = (env: Envelope): boolean =>
  env.code === undefined ||
  hasCode(env, 'no_grant', 'unknown_instance') ||
  env.code.startsWith('grant_');

interface FailureRule {
  readonly matches: (env: Envelope) => boolean;
  readonly code: CliErrorCode;
  readonly prefix: string;
  readonly nextStep: (env: Envelope) => string;
}

/** Any other failure: infrastructure (exit 2), with the broker's retry advice. */
const INFRASTRUCTURE_RULE: FailureRule = {
  matches: () => true,
  code: 'infrastructure',
  prefix: '',
  nextStep: (e) => (e.retry === false ? 'do not retry; see the message' : 'retry later'),
};

/** How a non-ok envelope maps to the exit codes (docs/contracts.md §6); the first rule wins. */
const FAILURE_RULES: readonly FailureRule[] = [
  {
    // "This would overwrite something": the file exists, or changed since it was fetched.
    matches: (e) => e.status === 'refused' && hasCode(e, 'conflict'),
    code: 'clobber',
    prefix: 'clobber refused: ',
    nextStep: () => 'fetch the current version, merge your change, then push again',
  },
  {
    // Someone else holds a lock on the file: nothing was overwritten, and the same upload
    // will meet the same lock (never exit 2, "retry later").
    matches: (e) => e.status === 'refused' && hasCode(e, 'locked'),
    code: 'clobber',
    prefix: 'clobber refused: ',
    nextStep: () =>
      'someone else holds a lock on the file: ask the owner to release it, then fetch it again and reapply your change',
  },
  {
    matches: (e) => hasCode(e, 'verification_failed'),
    code: 'verification',
    prefix: 'verification failed: ',
    nextStep: () => 'treat the remote copy as corrupt: fetch it to inspect, then try again',
  },
  {
    // The broker could not record the operation: an infrastructure failure, not a verdict.
    matches: (e) => hasCode(e, 'audit_unavailable'),
    code: 'infrastructure',
    prefix: '',
    nextStep: () => 'retry later; the broker owner must fix its audit log',
  },
  {
    // Every refusal, whatever its code: the wall or a grant said no (exit 3, never 2).
    matches: (e) => e.status === 'refused' || e.status === 'pending',
    code: 'refused',
    prefix: 'refused: ',
    nextStep: (e) =>
      needsAccess(e)
        ? 'ask for access with request_access (and wait for the owner); do not retry as is'
        : 'change what the message names; do not retry as is',
  },
];

/** Turns a non-ok envelope into the CLI failure with the contract's exit code. */
export function envelopeFailure(env: Envelope, what: string): CliError {
  const detail = env.message !== '' ? env.message : `${what} failed`;
  const rule = FAILURE_RULES.find((r) => r.matches(env)) ?? INFRASTRUCTURE_RULE;
  return new CliError(
    rule.code,
    `${rule.prefix}${detail}`,
    env.hint ?? rule.nextStep(env),
    env.code === undefined ? {} : { code: env.code },
  );
}
