/** One `broker` sub-command: its help text and what it runs. */
export interface Command {
  /** The word typed after `broker`, e.g. `fetch`. */
  readonly name: string;
  /** One line for `broker --help`. */
  readonly summary: string;
  /** Full help for `broker <name> --help`: usage, options, an example. */
  readonly help: string;
  /** Runs the command; resolves to the process exit code (docs/contracts.md §6). */
  run(args: readonly string[]): Promise<number>;
}

/** Exit codes (docs/contracts.md §6). */
export const ExitCode = {
  ok: 0,
  usage: 1,
  infrastructure: 2,
  refused: 3,
  verification: 4,
  clobber: 5,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
