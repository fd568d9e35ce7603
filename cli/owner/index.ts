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

/** The commands that run the daemon: listed first by `broker --help`, before the client's. */
export const daemonCommands: readonly Command[] = [startCommand, serveCommand];

/** The owner's commands beside a running (or stopped) daemon, in the order help lists them. */
export const ownerToolCommands: readonly Command[] = [
  ...ownerSocketCommands,
  undoCommand,
  pairCommand,
  ...pinCommands,
  reconcileCommand,
  auditCommand,
  doctorCommand,
];

/** The owner's commands (the broker package's `broker` only). */
export const ownerCommands: readonly Command[] = [...daemonCommands, ...ownerToolCommands];
