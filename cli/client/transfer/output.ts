import { ExitCode } from '../../command.js';
import { forTerminal } from '../../terminal.js';
import { CliError } from './errors.js';
import type { JsonObject } from '../../../broker/base/protocol.js';

/** The one JSON object a client command prints on stdout (docs/contracts.md §6). */
export interface Outcome {
  status: string;
  local_path?: string;
  sha256?: string;
  size?: number;
  etag?: string | null;
  [key: string]: unknown;
}

/** A failure as the CLI reports it; anything but a CliError is a bug in the CLI. */
export function asCliError(err: unknown): CliError {
  return err instanceof CliError
    ? err
    : new CliError(
        'usage',
        // Security: not the error's own text (a library's message may quote anything);
        // its name says enough for a bug report.
        `unexpected failure (${err instanceof Error ? err.name : typeof err})`,
        'this is a bug in the broker CLI; please report it with the command you ran',
      );
}

/** What a client command answers: the one JSON object, and the exit code that goes with it. */
export interface Settled {
  readonly answer: JsonObject;
  readonly exitCode: ExitCode;
}

/**
 * Runs a client command body and turns its result or failure into the contract's
 * answer (with `warnings` when the body noted any) and exit code; human text (notes, the
 * failure and its next step) goes to `stderr`. The command line prints the answer on
 * stdout (runClientCommand); `broker mcp` sends it as a tool result.
 */
export async function settle(
  stderr: (text: string) => void,
  body: (warn: (note: string) => void) => Promise<Outcome>,
): Promise<Settled> {
  const warnings: string[] = [];
  const noted = (): JsonObject => (warnings.length > 0 ? { warnings } : {});
  const warn = (note: string): void => {
    warnings.push(note);
    stderr(`broker: note: ${forTerminal(note)}\n`);
  };
  try {
    const outcome = await body(warn);
    return { answer: { ...outcome, ...noted() }, exitCode: ExitCode.ok };
  } catch (err) {
    const failure = asCliError(err);
    // Security: messages carry remote file names and the broker's words; an escape
    // sequence or bidi override in a name must not repaint or reorder what the user reads
    // (on stdout too: jsonLine).
    stderr(`broker: ${forTerminal(failure.message)}\n  next: ${forTerminal(failure.nextStep)}\n`);
    return {
      answer: {
        status: 'failed',
        ...failure.fields,
        error: failure.message,
        next_step: failure.nextStep,
        ...noted(),
      },
      exitCode: failure.exitCode,
    };
  }
}
