import type { Command } from '../command.js';
import { auditCommand } from './audit.js';
import { doctorCommand } from './doctor.js';
import { ownerSocketCommands } from './owner.js';
import { pairCommand } from './pair.js';
import { pinCommands } from './pins.js';
import { reconcileCommand } from './reconcile.js';
import { serveCommand } from './serve.js';
import { startCommand } from './start.js';
import { processUndoCommand as undoCommand } from './undo.js';

/** The owner's commands (the broker package's `broker` only). */
export const ownerCommands: readonly Command[] = [
  startCommand,
  serveCommand,
  ...ownerSocketCommands,
  undoCommand,
  pairCommand,
  ...pinCommands,
  reconcileCommand,
  auditCommand,
  doctorCommand,
];

export {
  auditCommand,
  doctorCommand,
  ownerSocketCommands,
  pairCommand,
  pinCommands,
  reconcileCommand,
  serveCommand,
  startCommand,
  undoCommand,
};
