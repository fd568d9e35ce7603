/**
 * How the CLI reads a broker answer (cli/client/transfer/broker-client.ts): an envelope only
 * when it has a known status and its fields are of the types the CLI reads, and which
 * exit code each failure maps to (docs/contracts.md §6).
 */
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../cli/command.js';
import { asEnvelope, envelopeFailure } from '../../../cli/client/transfer/envelope.js';

describe('an answer is an envelope only in its documented shape', () => {
  it('keeps the fields a command reads on, and defaults a missing message to ""', () => {
    expect(asEnvelope({ status: 'ok', blob_url: '/transfer/blobs/t', size: 3 })).toEqual({
      status: 'ok',
      message: '',
      blob_url: '/transfer/blobs/t',
      size: 3,
    });
  });

  it.each([
    ['not an object', 'ok'],
    ['an array', [{ status: 'ok' }]],
    ['null', null],
    ['an unknown status', { status: 'fine' }],
    ['no status', { message: 'ok' }],
    ['a message that is not a string', { status: 'refused', message: 3 }],
    ['a code that is not a string', { status: 'refused', code: 403 }],
    ['a retry that is not a boolean', { status: 'error', retry: 'yes' }],
    ['a hint that is not a string', { status: 'refused', hint: ['x'] }],
  ])('%s is not one', (_what, value) => {
    expect(asEnvelope(value)).toBeUndefined();
  });
});

describe('a failure envelope maps to the exit code of its kind', () => {
  it.each([
    [{ status: 'refused', code: 'no_grant' }, ExitCode.refused, 'request_access'],
    [{ status: 'refused', code: 'grant_revoked' }, ExitCode.refused, 'request_access'],
    [{ status: 'refused', code: 'conflict' }, ExitCode.clobber, 'merge'],
    [{ status: 'refused', code: 'locked' }, ExitCode.clobber, 'lock'],
    [{ status: 'refused', code: 'insufficient_storage' }, ExitCode.refused, 'do not retry'],
    [{ status: 'error', code: 'verification_failed' }, ExitCode.verification, 'corrupt'],
    [{ status: 'error', code: 'audit_unavailable' }, ExitCode.infrastructure, 'audit'],
    [
      { status: 'error', code: 'nextcloud_unavailable', retry: true },
      ExitCode.infrastructure,
      'retry',
    ],
  ] as const)('%j → exit %i', (raw, exitCode, nextStep) => {
    const env = asEnvelope(raw);
    expect(env).toBeDefined();
    const failure = envelopeFailure(env!, 'read');
    expect(failure.exitCode).toBe(exitCode);
    expect(failure.nextStep).toContain(nextStep);
  });
});
