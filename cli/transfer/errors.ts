import { ExitCode } from '../command.js';

/**
 * A failure a client command reports: the exit code (docs/contracts.md §6), a one-line cause and
 * the next step for whoever (person or agent) runs the command.
 */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly nextStep: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string, nextStep: string): CliError =>
  new CliError(ExitCode.usage, message, nextStep);
