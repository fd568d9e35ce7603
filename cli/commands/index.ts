import type { Command } from '../command.js';
import { auditCommand } from './audit.js';
import { serveCommand } from './serve.js';

/** Every `broker` sub-command, in the order `broker --help` lists them. */
export const commands: readonly Command[] = [serveCommand, auditCommand];
