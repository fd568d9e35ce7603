/**
 * A usage error, from any command: the contract's one JSON object on stdout (`status`
 * "failed", `error`, `next_step`), the same words on stderr for a person, exit 1.
 */
import { ExitCode } from './command.js';
import { forTerminal, jsonLine, type Io } from './terminal.js';

export type UsageIo = Io;
export { processIo as processUsageIo } from './terminal.js';

/** Reports a usage error (`who` is e.g. `broker serve`); returns exit code 1. */
export function usageFailure(io: UsageIo, who: string, error: string, nextStep: string): number {
  io.stdout(jsonLine({ status: 'failed', error, next_step: nextStep }));
  io.stderr(`${who}: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
  return ExitCode.usage;
}
