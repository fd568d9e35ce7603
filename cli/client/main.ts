/**
 * `broker <command> …` as the agent's host runs it: the client commands only, bundled
 * with everything they import into one file with no dependencies (dist/broker-cli.mjs,
 * built by scripts/build-cli.ts; docs/clients.md). The owner's commands load the daemon
 * (SQLite, express, the MCP SDK, matrix-js-sdk) and are not in that file: asked for one,
 * it says where it runs.
 */
import { BROKER_VERSION } from '../../broker/base/version.js';
import { clientCommands, OWNER_COMMAND_NAMES } from './commands/index.js';
import { BUILTINS_USAGE, commandList, dispatch } from '../dispatch.js';
import { processUsageIo, type UsageIo } from '../usage.js';

const USAGE = `broker: the Nextcloud Access Broker's client (for the agent's host)

Usage: broker <command> [options]

Commands:
${commandList(clientCommands)}

Run \`broker <command> --help\` for a command's options and an example.
These commands read $BROKER_URL and $BROKER_TRANSFER_TOKEN. The owner's commands
(${OWNER_COMMAND_NAMES.join(', ')}) run where the broker is installed.

${BUILTINS_USAGE}
`;

export function clientMain(argv: readonly string[], io: UsageIo = processUsageIo): Promise<number> {
  return dispatch(
    {
      usage: USAGE,
      commands: clientCommands,
      version: () => Promise.resolve(BROKER_VERSION),
      elsewhere: (name) =>
        OWNER_COMMAND_NAMES.includes(name)
          ? {
              error: `"${name}" is an owner's command, not part of the agent's client`,
              nextStep: `run \`broker ${name}\` where the broker is installed (its bin/broker.js); this file holds ${clientCommands.map((c) => c.name).join(', ')}`,
            }
          : undefined,
    },
    argv,
    io,
  );
}
