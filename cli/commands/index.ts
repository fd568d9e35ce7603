import type { Command } from '../command.js';
import { auditCommand } from './audit.js';
import { clientCommands } from './client.js';
import { doctorCommand } from './doctor.js';
import { ownerSocketCommands } from './owner.js';
import { reconcileCommand } from './reconcile.js';
import { serveCommand } from './serve.js';
import { startCommand } from './start.js';

/** The owner's commands (the broker package's `broker` only). */
export const ownerCommands: readonly Command[] = [
  startCommand,
  serveCommand,
  ...ownerSocketCommands,
  reconcileCommand,
  auditCommand,
  doctorCommand,
];

/** Every `broker` sub-command, in the order `broker --help` lists them. */
export const commands: readonly Command[] = [
  startCommand,
  serveCommand,
  ...clientCommands,
  ...ownerSocketCommands,
  reconcileCommand,
  auditCommand,
  doctorCommand,
];
