import type { Command } from '../../command.js';
import { upload } from '../transfer/upload.js';
import { runClientCommand, type ClientTransfer } from '../transfer/run.js';
import { CLIENT_ENV_HELP, EXIT_CODES_HELP, LOCAL_HELP } from './help.js';

export const checkinTransfer: ClientTransfer = {
  name: 'checkin',
  flags: ['--abandon'],
  body: (ctx) =>
    upload({ ...ctx, mode: 'checkin', abandon: ctx.flags.has('--abandon'), local: ctx.local }),
};

export const checkinCommand: Command = {
  name: 'checkin',
  summary: 'upload a checked-out file under its lock, verify, unlock',
  help: `Usage: broker checkin INSTANCE:PATH [LOCAL] [--abandon]

Uploads the checked-out file under its Nextcloud lock (committed once, verified by
Nextcloud's own sha256 of what it stored), then releases the lock. A file not edited
since its checkout is not uploaded again: the lock is released and the answer is
"unchanged" with "unlocked": true.

Options:
  --abandon   release the lock without uploading anything

Example:
  broker checkin personal:Documents/budget.ods
  broker checkin personal:Documents/budget.ods --abandon

${LOCAL_HELP}

${CLIENT_ENV_HELP}
${EXIT_CODES_HELP}`,
  run: (args) => runClientCommand(checkinTransfer, args),
};
