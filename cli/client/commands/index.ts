import type { Command } from '../../command.js';
import { checkinCommand } from './checkin.js';
import { checkoutCommand } from './checkout.js';
import { fetchCommand } from './fetch.js';
import { mcpCommand } from './mcp.js';
import { pushCommand } from './push.js';

/**
 * The commands an agent's host runs: they talk to a running broker and import nothing
 * of the daemon, so they bundle into one dependency-free file (dist/broker-cli.mjs).
 */
export const clientCommands: readonly Command[] = [
  fetchCommand,
  pushCommand,
  checkoutCommand,
  checkinCommand,
  mcpCommand,
];

/**
 * The owner's commands, which run where the broker is installed (they load the
 * daemon): named here so the agent's file can say where they are instead of
 * "unknown command". test/cli/client/bundle.test.ts checks this list against commands/index.ts.
 */
export const OWNER_COMMAND_NAMES: readonly string[] = [
  'start',
  'serve',
  'approve',
  'deny',
  'revoke',
  'show',
  'status',
  'grants',
  'undo',
  'pair',
  'pins',
  'unpin',
  'reconcile',
  'audit',
  'doctor',
];
