/**
 * Why the Matrix gateway refused to start. Each message names the cause and the fix,
 * and never contains the bot's access token.
 */
import { CodedError } from '../../base/coded-error.js';
export type MatrixGatewayErrorCode =
  | 'unreachable'
  | 'unauthorized'
  | 'wrong_user'
  | 'not_joined'
  | 'approver_not_member'
  | 'not_invite_only'
  | 'encrypted'
  | 'not_encrypted'
  | 'identity_unreadable'
  | 'stale_session'
  | 'crypto_setup'
  | 'sync_timeout'
  | 'bad_response';

export class MatrixGatewayError extends CodedError<MatrixGatewayErrorCode> {
  override readonly name = 'MatrixGatewayError';
}
