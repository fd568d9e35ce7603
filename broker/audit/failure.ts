/**
 * The audit log's failed state, shared by the log writer and the checkpoint writer.
 * Security: after a failed or timed-out write we cannot know what reached the disk, so
 * the log refuses every later append. A failure that is only a full disk or quota
 * (ENOSPC, EDQUOT: the kernel refused the bytes) may be resumed by the log itself once
 * it has re-read and re-verified what follows its durable head (resume.ts); any other
 * failure (an I/O error, a read-only file system, a hang) holds until the broker
 * restarts and re-verifies.
 */
import { errorMessage } from '../base/errors.js';
import type { Clock } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import { AuditError, type AuditErrorCode } from './errors.js';
import { errnoCode } from './fs.js';

/** The errno codes of a full disk or quota: space can come back, nothing else failed. */
const SPACE_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);

/** Whether `err` is a full disk (or quota), the one failure the log may resume from. */
export function isOutOfSpace(err: unknown): boolean {
  const code = errnoCode(err);
  return code !== undefined && SPACE_CODES.has(code);
}

export class FailureState {
  #failure: AuditError | undefined;
  #spaceOnly = true;
  #refusedSince = 0;
  #failedAt: number | undefined;

  readonly #logger: Logger | undefined;
  readonly #now: Clock;

  constructor(logger: Logger | undefined, now: Clock) {
    this.#logger = logger;
    this.#now = now;
  }

  /** When the failure began (the injected clock), while failed. */
  get since(): number | undefined {
    return this.#failedAt;
  }

  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /** True while failed and every failure so far was a full disk (resume.ts may resume). */
  get resumable(): boolean {
    return this.#failure !== undefined && this.#spaceOnly;
  }

  /** The errno code of the first failure (e.g. `ENOSPC`), or its AuditError code. */
  get cause(): string | undefined {
    const f = this.#failure;
    if (f === undefined) return undefined;
    return errnoCode(f.cause) ?? f.code;
  }

  /** Appends refused since the failure (for the recovery record that ends it). */
  get refused(): number {
    return this.#refusedSince;
  }

  /** Counts one append refused because of the failure. */
  noteRefused(): void {
    if (this.#failure !== undefined) this.#refusedSince += 1;
  }

  /**
   * Enters the failed state (first failure wins) and returns the error for the batch.
   * Security: any failure that is not a full disk, even after the first, makes the
   * state one only a restart ends (a late hang or I/O error leaves unknown bytes).
   */
  fail(err: unknown, what: 'write' | 'checkpoint', file: string): AuditError {
    if (!isOutOfSpace(err)) this.#spaceOnly = false;
    if (this.#failure !== undefined) return this.#failure;
    this.#failedAt = this.#now();
    const code: AuditErrorCode =
      err instanceof AuditError && err.code === 'timeout' ? 'timeout' : 'write_failed';
    const next = this.#spaceOnly
      ? 'free disk space (the log retries and resumes by itself) or restart the broker, which re-verifies the log'
      : 'fix the disk and restart the broker, which re-verifies the log';
    this.#failure = new AuditError(
      code,
      `audit ${what} to ${file} failed (${errorMessage(err)}); the audit log refuses further appends: ${next}`,
      { cause: err },
    );
    this.#logger?.error('audit log failed', { code, file, error: errorMessage(err) });
    return this.#failure;
  }

  /** A failure that happened while trying to resume: the state stays failed. */
  failAgain(err: unknown): void {
    if (!isOutOfSpace(err)) this.#spaceOnly = false;
  }

  /** Ends the failed state (resume.ts, after its recovery record is durable). */
  clear(): void {
    this.#failure = undefined;
    this.#failedAt = undefined;
    this.#spaceOnly = true;
    this.#refusedSince = 0;
  }

  /** The error for an append made after the failure; undefined while healthy. */
  later(): AuditError | undefined {
    const f = this.#failure;
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
