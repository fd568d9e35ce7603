/** Typed errors of the audit log. Messages name the file and the next step, never a secret. */
import { CodedError } from '../base/coded-error.js';
export type AuditErrorCode =
  | 'write_failed' // a write or fsync failed; the log refuses every later append
  | 'timeout' // a write or fsync did not finish within writeTimeoutMs; same consequence
  | 'closed' // append after close()
  | 'locked' // another live process holds audit.lock
  | 'corrupt' // the chain or the checkpoint does not verify; the broker must not start
  | 'invalid_fields'; // the caller passed reserved or non-JSON fields (a programming error)

export class AuditError extends CodedError<AuditErrorCode> {
  override readonly name = 'AuditError';
  /** The first bad record, for `corrupt`. */
  readonly seq: number | undefined;

  constructor(
    code: AuditErrorCode,
    message: string,
    options: { cause?: unknown; seq?: number } = {},
  ) {
    super(code, message, options);
    this.seq = options.seq;
  }
}
