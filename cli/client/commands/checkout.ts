import type { Command } from '../../command.js';
import { download } from '../transfer/download.js';
import { runClientCommand, type ClientTransfer } from '../transfer/run.js';
import { CLIENT_ENV_HELP, EXIT_CODES_HELP, LOCAL_HELP } from './help.js';

export const checkoutTransfer: ClientTransfer = {
  name: 'checkout',
  flags: ['--force'],
  body: (ctx) =>
    download({ ...ctx, force: ctx.flags.has('--force'), mode: 'checkout', local: ctx.local }),
};

export const checkoutCommand: Command = {
  name: 'checkout',
  summary: 'lock a remote file on Nextcloud and stage it (needs a write grant)',
  help: `Usage: broker checkout INSTANCE:PATH [LOCAL] [--force]

Takes a Nextcloud lock on the file (nobody else, the owner's own sync clients
included, can change it meanwhile), stages it like \`broker fetch\` and records the lock
in the CLI's state folder. Finish with \`broker checkin\` (upload and unlock) or
\`broker checkin --abandon\` (unlock only). The broker also unlocks when the grant
expires or is revoked.

Options:
  --force   replace a local file that was edited since it was fetched

Example:
  broker checkout personal:Documents/budget.ods
  # edit ~/.local/share/broker/stage/personal/Documents/budget.ods, then:
  broker checkin personal:Documents/budget.ods
  broker checkout personal:Documents/budget.ods ./budget.ods
  broker checkin personal:Documents/budget.ods ./budget.ods

${LOCAL_HELP}

${CLIENT_ENV_HELP}
${EXIT_CODES_HELP}`,
  run: (args) => runClientCommand(checkoutTransfer, args),
};
