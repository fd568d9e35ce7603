/**
 * Nextcloud client errors → envelopes. Each code maps to `refused` (the server said no
 * for a reason that retrying as is will not change) or `error` (infrastructure; the
 * client's `retry` flag says whether later may work). The client's message is already
 * one scrubbed line naming cause and next step; it is scrubbed again here regardless.
 */
import { NextcloudError, type NextcloudErrorCode } from '../nextcloud/errors.js';
import { failure, refused, type Envelope, type EnvelopeCode } from '../base/envelope.js';

type Mapping = { status: 'refused' | 'error'; code: EnvelopeCode };

const MAP = new Map<NextcloudErrorCode, Mapping>([
  ['invalid_path', { status: 'refused', code: 'invalid_path' }],
  ['name_too_long', { status: 'refused', code: 'invalid_path' }],
  ['bad_request', { status: 'refused', code: 'invalid_path' }],
  ['invalid_argument', { status: 'refused', code: 'invalid_arguments' }],
  ['bad_cursor', { status: 'refused', code: 'invalid_arguments' }],
  ['range_not_satisfiable', { status: 'refused', code: 'invalid_arguments' }],
  ['forbidden', { status: 'refused', code: 'permission' }],
  ['not_found', { status: 'refused', code: 'not_found' }],
  // 409: a missing parent folder (or a move into its own subtree): not a clobber.
  ['conflict', { status: 'refused', code: 'not_found' }],
  ['exists', { status: 'refused', code: 'conflict' }],
  ['precondition_failed', { status: 'refused', code: 'conflict' }],
  ['destination_exists', { status: 'refused', code: 'conflict' }],
  ['locking_unavailable', { status: 'refused', code: 'locking_unavailable' }],
  ['bad_lock_token', { status: 'refused', code: 'lock_token_unknown' }],
  ['trash_disabled', { status: 'refused', code: 'trash_unavailable' }],
  ['not_trashable', { status: 'refused', code: 'trash_unavailable' }],
  ['lock_not_taken', { status: 'refused', code: 'locked' }],
  ['is_folder', { status: 'refused', code: 'not_a_file' }],
  ['not_folder', { status: 'refused', code: 'not_a_folder' }],
  ['collection_ambiguous', { status: 'refused', code: 'collection_ambiguous' }],
  ['not_a_collection', { status: 'refused', code: 'not_a_collection' }],
  ['uid_exists', { status: 'refused', code: 'conflict' }],
  ['calendar_unreadable', { status: 'error', code: 'calendar_unreadable' }],
  ['locked', { status: 'error', code: 'locked' }],
  ['unauthorized', { status: 'error', code: 'nextcloud_auth' }],
  ['insufficient_storage', { status: 'error', code: 'insufficient_storage' }],
  ['throttled', { status: 'error', code: 'nextcloud_unavailable' }],
  ['server_error', { status: 'error', code: 'nextcloud_unavailable' }],
  ['unreachable', { status: 'error', code: 'nextcloud_unavailable' }],
  ['timeout', { status: 'error', code: 'nextcloud_unavailable' }],
  ['unexpected_status', { status: 'error', code: 'nextcloud_error' }],
  ['bad_response', { status: 'error', code: 'nextcloud_error' }],
  ['aborted', { status: 'error', code: 'aborted' }],
  ['verification_failed', { status: 'error', code: 'verification_failed' }],
  // Only the pipeline's own signal cancels; it answers for the grant that ended instead.
  ['cancelled', { status: 'error', code: 'aborted' }],
]);

export function isNextcloudError(error: unknown): error is NextcloudError {
  return error instanceof NextcloudError;
}

/** Whether a step's failure is Nextcloud's "no such file or folder". */
export function isNotFound(error: unknown): boolean {
  return error instanceof NextcloudError && error.code === 'not_found';
}

/** Whether a step's failure is "that is a file, not a folder" (a list of a file). */
export function isNotFolder(error: unknown): boolean {
  return error instanceof NextcloudError && error.code === 'not_folder';
}

export function envelopeForNextcloudError(
  error: NextcloudError,
  scrub: (text: string) => string,
): Envelope {
  const mapping = MAP.get(error.code) ?? { status: 'error', code: 'nextcloud_error' };
  const message = scrub(error.message);
  if (mapping.status === 'refused') return refused(mapping.code, message);
  return failure(mapping.code, message, error.retry, {
    hint: error.retry ? 'try again in a minute' : 'ask the owner to check the instance',
  });
}
