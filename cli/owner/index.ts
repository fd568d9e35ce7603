import type { Command } from '../command.js';
import { auditCommand } from './audit.js';
import { doctorCommand } from './doctor.js';
import { ownerSocketCommands } from './owner.js';
import { serveCommand } from './serve.js';
import { startCommand } from './start.js';

/** The owner's commands (the broker package's `broker` only). */
export const ownerCommands: readonly Command[] = [
  startCommand,
  serveCommand,
  ...ownerSocketCommands,
  auditCommand,
  doctorCommand,
];

export { auditCommand, doctorCommand, ownerSocketCommands, serveCommand, startCommand };
