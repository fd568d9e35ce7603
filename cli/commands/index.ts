import type { Command } from '../command.js';
import { auditCommand } from './audit.js';
import { checkinCommand } from './checkin.js';
import { checkoutCommand } from './checkout.js';
import { doctorCommand } from './doctor.js';
import { fetchCommand } from './fetch.js';
import { pushCommand } from './push.js';
import { serveCommand } from './serve.js';
import { startCommand } from './start.js';

/** Every `broker` sub-command, in the order `broker --help` lists them. */
export const commands: readonly Command[] = [
  startCommand,
  serveCommand,
  fetchCommand,
  pushCommand,
  checkoutCommand,
  checkinCommand,
  auditCommand,
  doctorCommand,
];
