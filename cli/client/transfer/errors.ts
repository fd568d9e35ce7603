import { CodedError } from '../../../broker/base/coded-error.js';
import { ExitCode } from '../../command.js';

/** Why a client command failed, named as its exit code is (docs/contracts.md §6). */
export type CliErrorCode = Exclude<keyof typeof ExitCode, 'ok'>;

/** What a failure adds to the command's answer besides `error` and `next_step`. */
export interface CliErrorFields {
  /** The broker's envelope code behind it. */
  readonly code?: string;
  /** The local file it concerns. */
  readonly local_path?: string;
  /** Several files fetched at once: each one's result. */
  readonly files?: readonly object[];
}

/**
 * A failure a client command reports: its code (which gives the exit code), a one-line
 * cause and the next step for whoever (person or agent) runs the command.
 */
export class CliError extends CodedError<CliErrorCode> {
  override readonly name = 'CliError';
  constructor(
    code: CliErrorCode,
    message: string,
    readonly nextStep: string,
    readonly fields: CliErrorFields = {},
  ) {
    super(code, message);
  }

  /** The process exit code: the one place a cause becomes a number. */
  get exitCode(): ExitCode {
    return ExitCode[this.code];
  }
}

export const usageError = (message: string, nextStep: string): CliError =>
  new CliError('usage', message, nextStep);
