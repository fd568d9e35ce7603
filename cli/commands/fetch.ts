import type { Command } from '../command.js';
import { download } from '../transfer/download.js';
import { runClientCommand, type ClientTransfer } from '../transfer/run.js';
import { CLIENT_ENV_HELP, EXIT_CODES_HELP, LOCAL_HELP } from './client-help.js';

export const fetchTransfer: ClientTransfer = {
  name: 'fetch',
  flags: ['--force'],
  body: (ctx) =>
    download({ ...ctx, force: ctx.flags.has('--force'), mode: 'fetch', local: ctx.local }),
};

export const fetchCommand: Command = {
  name: 'fetch',
  summary: 'stage a remote file locally (needs a read grant)',
  help: `Usage: broker fetch INSTANCE:PATH [LOCAL] [--force]

Downloads a file through the broker into the staging folder (or LOCAL), verifies its
size and sha256 against what the broker streamed, and records it in the CLI's state
folder. Fetching again when the remote file is unchanged transfers nothing. A refused
or failed fetch leaves nothing behind.

Options:
  --force   replace a local file that was edited since it was fetched (or that the
            broker did not stage); without it that is refused with exit 5

Example:
  broker fetch personal:Documents/report.odt
  broker fetch personal:Documents/report.odt ./report.odt

${LOCAL_HELP}

${CLIENT_ENV_HELP}
${EXIT_CODES_HELP}`,
  run: (args) => runClientCommand(fetchTransfer, args),
};
