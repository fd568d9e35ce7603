import type { Command } from '../../command.js';
import { upload } from '../transfer/upload.js';
import { runClientCommand, type ClientTransfer } from '../transfer/run.js';
import { CLIENT_ENV_HELP, EXIT_CODES_HELP, LOCAL_HELP } from './help.js';

export const pushTransfer: ClientTransfer = {
  name: 'push',
  flags: [],
  body: (ctx) => upload({ ...ctx, mode: 'push', local: ctx.local }),
};

export const pushCommand: Command = {
  name: 'push',
  summary: 'upload a local file, never clobbering (needs a write grant)',
  help: `Usage: broker push INSTANCE:PATH [LOCAL]

Uploads the staged file (or LOCAL) through the broker. A file that was never fetched
is created only if it does not exist remotely; a fetched one is replaced only if the
remote copy is unchanged since the fetch (same etag). Otherwise nothing is written and
the command exits 5 ("clobber refused"). The broker's sha256 of the stored bytes is
compared with the local file's. A file equal to what was fetched (or last pushed) is
not uploaded again: the answer is "unchanged".

Example:
  broker push personal:Documents/notes.md ./notes.md

${LOCAL_HELP}

${CLIENT_ENV_HELP}
${EXIT_CODES_HELP}`,
  run: (args) => runClientCommand(pushTransfer, args),
};
