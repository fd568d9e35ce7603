import type { Command } from '../../command.js';
import { serveMcp } from '../mcp/server.js';
import { processUsageIo, usageFailure } from '../../usage.js';
import { CLIENT_ENV_HELP } from './help.js';

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve fetch, push, checkout and checkin as MCP tools on stdio',
  help: `Usage: broker mcp

An MCP server on stdin/stdout for an agent's MCP client to start (docs/clients.md):
tools fetch, push, checkout and checkin, with the arguments of the commands of those
names (target is INSTANCE:PATH, local is LOCAL, each --flag a boolean). A tool answers
the one JSON object the command prints, with exit_code; a failure is a tool result with
isError. File content never passes through MCP: it goes between the broker and the
local file. A call with a progressToken gets notifications/progress. stdout carries
only MCP messages; notes and failures also go to stderr. Runs until stdin closes.

Example:
  broker mcp   # started by the MCP client, not by hand

In Hermes Agent's config.yaml:
  mcp_servers:
    broker-files:
      command: broker
      args: [mcp]
      env:
        BROKER_URL: http://10.8.0.1:8765
        BROKER_TRANSFER_TOKEN: \${BROKER_TRANSFER_TOKEN}

${CLIENT_ENV_HELP.replace(/\n\nOutput:[\s\S]*$/, '')}`,
  run: (args) => {
    if (args.length > 0) {
      return Promise.resolve(
        usageFailure(
          processUsageIo,
          'broker mcp',
          'broker mcp takes no arguments',
          'configure it through the environment (run `broker mcp --help`)',
        ),
      );
    }
    // Security (of the protocol channel): stdout carries only MCP messages. Anything
    // logged through console goes to stderr, and a client that closed its end (EPIPE)
    // gets nothing more instead of crashing a transfer in progress.
    const toStderr = (...parts: unknown[]): void => {
      process.stderr.write(`${parts.map(String).join(' ')}\n`);
    };
    console.log = toStderr;
    console.info = toStderr;
    console.debug = toStderr;
    process.stdout.on('error', () => undefined);
    return serveMcp({
      env: process.env,
      input: process.stdin,
      send: (line) => {
        if (!process.stdout.destroyed) process.stdout.write(line);
      },
      stderr: (text) => process.stderr.write(text),
    });
  },
};
