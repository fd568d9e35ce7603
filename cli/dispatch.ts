import { ExitCode, type Command } from './command.js';
import { usageFailure, type UsageIo } from './usage.js';

/** What one entry point of `broker` offers: the broker package's, or the agent's file. */
export interface EntryPoint {
  /** `broker --help`. */
  readonly usage: string;
  readonly commands: readonly Command[];
  /** The version `broker --version` prints. */
  readonly version: () => Promise<string>;
  /** Why a command is not here and where it is; undefined for a command nobody has. */
  readonly elsewhere?: (name: string) => { error: string; nextStep: string } | undefined;
}

const HELP_NEXT_STEP = 'run `broker --help` for the commands';

/** `broker --help`'s list of commands, one line each. */
export const commandList = (commands: readonly Command[]): string =>
  commands.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n');

/**
 * Dispatches `broker <command> …`; returns the exit code. Asking for help (`--help`,
 * `-h`, `help`) or the version prints text on stdout and exits 0: it is not a command
 * run. Every other way out prints the one JSON object, usage errors included.
 */
export async function dispatch(
  entry: EntryPoint,
  argv: readonly string[],
  io: UsageIo,
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(entry.usage);
    return ExitCode.ok;
  }
  if (name === undefined) {
    io.stderr(entry.usage);
    return usageFailure(io, 'broker', 'no command given', HELP_NEXT_STEP);
  }
  if (name === '--version') {
    io.stdout(`${await entry.version()}\n`);
    return ExitCode.ok;
  }
  const command: Command | undefined = entry.commands.find((c) => c.name === name);
  if (command === undefined) {
    const moved = entry.elsewhere?.(name);
    if (moved !== undefined) return usageFailure(io, 'broker', moved.error, moved.nextStep);
    return usageFailure(io, 'broker', `unknown command "${name}"`, HELP_NEXT_STEP);
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(command.help.endsWith('\n') ? command.help : `${command.help}\n`);
    return ExitCode.ok;
  }
  return command.run(rest);
}
