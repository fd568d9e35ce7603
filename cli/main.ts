import { pathToFileURL } from 'node:url';
import type { Command } from './command.js';
import { commands } from './commands/index.js';

const USAGE = `broker: the Nextcloud Access Broker

Usage: broker <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Run \`broker <command> --help\` for a command's options and an example.
Client commands read $BROKER_URL and $BROKER_TRANSFER_TOKEN.
`;

/** Dispatches `broker <command> …`; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return name === undefined ? 1 : 0;
  }
  if (name === '--version') {
    process.stdout.write(`${await version()}\n`);
    return 0;
  }
  const command: Command | undefined = commands.find((c) => c.name === name);
  if (command === undefined) {
    process.stderr.write(`broker: unknown command "${name}"\n\n${USAGE}`);
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.help.endsWith('\n') ? command.help : `${command.help}\n`);
    return 0;
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
