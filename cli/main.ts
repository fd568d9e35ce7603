import { pathToFileURL } from 'node:url';
import type { Command } from './command.js';
import { clientCommands } from './client/commands/index.js';
import { daemonCommands, ownerToolCommands } from './owner/index.js';
import { BUILTINS_USAGE, commandList, dispatch } from './dispatch.js';
import { processUsageIo, type UsageIo } from './usage.js';

/** Every `broker` sub-command (the owner's and the client's), in the order `broker --help` lists them. */
export const commands: readonly Command[] = [
  ...daemonCommands,
  ...clientCommands,
  ...ownerToolCommands,
];

const USAGE = `broker: the Nextcloud Access Broker

Usage: broker <command> [options]

Commands:
${commandList(commands)}

Run \`broker <command> --help\` for a command's options and an example.
Client commands read $BROKER_URL and $BROKER_TRANSFER_TOKEN.
approve, deny, revoke, show, status, grants, undo, pair, pins, unpin and reconcile talk to
the running broker over <data_dir>/owner.sock (found through --config FILE, $BROKER_CONFIG or
./config.yaml). With an encrypted Matrix room, \`broker pair\` pins the device you decide from.

${BUILTINS_USAGE}
`;

/** `broker <command> …` as the broker package runs it (bin/broker.js): every command. */
export function main(argv: readonly string[], io: UsageIo = processUsageIo): Promise<number> {
  return dispatch(
    {
      usage: USAGE,
      commands,
      version: async () => (await import('../broker/base/version.js')).BROKER_VERSION,
    },
    argv,
    io,
  );
}

// Run when executed directly (`node --import tsx cli/main.ts …` in tests and scripts);
// importing this module never starts anything.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
