import { ExitCode, type Command } from './command.js';
import { COMPLETION_HELP, completionScript, SHELLS, type Shell } from './completion.js';
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

/** `broker --help`'s lines for what every entry point answers besides its commands. */
export const BUILTINS_USAGE = `Also:
  broker help COMMAND          that command's help with an example (= broker COMMAND --help)
  broker --version             the broker's version
  broker completion bash|zsh   a shell completion script (broker help completion)`;

const isHelp = (word: string | undefined): boolean =>
  word === '--help' || word === '-h' || word === 'help';

const withNewline = (text: string): string => (text.endsWith('\n') ? text : `${text}\n`);

/** `broker help [COMMAND]`: the usage, or one command's help. */
function help(entry: EntryPoint, topic: string | undefined, io: UsageIo): number {
  if (topic === undefined) {
    io.stdout(entry.usage);
    return ExitCode.ok;
  }
  if (topic === 'completion') {
    io.stdout(COMPLETION_HELP);
    return ExitCode.ok;
  }
  const command = entry.commands.find((c) => c.name === topic);
  if (command === undefined) {
    return usageFailure(io, 'broker help', `unknown command "${topic}"`, HELP_NEXT_STEP);
  }
  io.stdout(withNewline(command.help));
  return ExitCode.ok;
}

/** `broker completion bash|zsh`. */
function completion(entry: EntryPoint, args: readonly string[], io: UsageIo): number {
  const [shell, ...extra] = args;
  if (isHelp(shell)) {
    io.stdout(COMPLETION_HELP);
    return ExitCode.ok;
  }
  if (!SHELLS.includes(shell as Shell) || extra.length > 0) {
    return usageFailure(
      io,
      'broker completion',
      shell === undefined ? 'no shell given' : `cannot complete for "${args.join(' ')}"`,
      `run \`broker completion bash\` or \`broker completion zsh\``,
    );
  }
  io.stdout(completionScript(shell as Shell, entry.commands));
  return ExitCode.ok;
}

/**
 * Dispatches `broker <command> …`; returns the exit code. Asking for help (`--help`,
 * `-h`, `help`, each optionally followed by a command), the version or a completion
 * script prints text on stdout and exits 0: it is not a command run. Every other way out prints the one JSON object, usage errors included.
 */
export async function dispatch(
  entry: EntryPoint,
  argv: readonly string[],
  io: UsageIo,
): Promise<number> {
  const [name, ...rest] = argv;
  if (isHelp(name)) return help(entry, rest[0], io);
  if (name === 'completion') return completion(entry, rest, io);
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
    io.stdout(withNewline(command.help));
    return ExitCode.ok;
  }
  return command.run(rest);
}
