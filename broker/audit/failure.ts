/**
 * The audit log's failed state, shared by the log writer and the checkpoint writer.
 * Security: after a failed or timed-out write we cannot know what reached the disk, so
 * the log refuses every later append until the broker restarts and re-verifies.
 */
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { AuditError, type AuditErrorCode } from './errors.js';

export class FailureState {
  private failure: AuditError | undefined;

  constructor(private readonly logger: Logger | undefined) {}

  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Enters the failed state (first failure wins) and returns the error for the batch. */
  fail(err: unknown, what: 'write' | 'checkpoint', file: string): AuditError {
    if (this.failure !== undefined) return this.failure;
    const code: AuditErrorCode =
      err instanceof AuditError && err.code === 'timeout' ? 'timeout' : 'write_failed';
    this.failure = new AuditError(
      code,
      `audit ${what} to ${file} failed (${errorMessage(err)}); the audit log refuses further appends: fix the disk and restart the broker, which re-verifies the log`,
      { cause: err },
    );
    this.logger?.error('audit log failed', { code, file, error: errorMessage(err) });
    return this.failure;
  }

  /** The error for an append made after the failure; undefined while healthy. */
  later(): AuditError | undefined {
    const f = this.failure;
    if (f === undefined) return undefined;
    return new AuditError(
      f.code,
      `the audit log failed earlier and refuses appends: ${f.message}`,
      {
        cause: f,
      },
    );
  }
}
