import { pathToFileURL } from 'node:url';
import { ExitCode, type Command } from './command.js';
import { commands } from './commands/index.js';
import { processUsageIo, usageFailure, type UsageIo } from './usage.js';

const USAGE = `broker: the Nextcloud Access Broker

Usage: broker <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Run \`broker <command> --help\` for a command's options and an example.
Client commands read $BROKER_URL and $BROKER_TRANSFER_TOKEN.
`;

const HELP_NEXT_STEP = 'run `broker --help` for the commands';

/**
 * Dispatches `broker <command> …`; returns the exit code. Asking for help (`--help`,
 * `-h`, `help`) or the version prints text on stdout and exits 0: it is not a command
 * run. Every other way out prints the one JSON object, usage errors included.
 */
export async function main(argv: readonly string[], io: UsageIo = processUsageIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(USAGE);
    return ExitCode.ok;
  }
  if (name === undefined) {
    io.stderr(USAGE);
    return usageFailure(io, 'broker', 'no command given', HELP_NEXT_STEP);
  }
  if (name === '--version') {
    io.stdout(`${await version()}\n`);
    return ExitCode.ok;
  }
  const command: Command | undefined = commands.find((c) => c.name === name);
  if (command === undefined) {
    return usageFailure(io, 'broker', `unknown command "${name}"`, HELP_NEXT_STEP);
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(command.help.endsWith('\n') ? command.help : `${command.help}\n`);
    return ExitCode.ok;
  }
  return command.run(rest);
}

async function version(): Promise<string> {
  const { BROKER_VERSION } = await import('../broker/base/version.js');
  return BROKER_VERSION;
}

// Run when executed directly (`node --import tsx cli/main.ts …` in tests and scripts);
// importing this module never starts anything.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
