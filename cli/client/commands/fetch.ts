import type { Command } from '../../command.js';
import { download } from '../transfer/download.js';
import { fetchFolder } from '../transfer/fetch-folder.js';
import { fetchMany } from '../transfer/fetch-many.js';
import { usageError } from '../transfer/errors.js';
import { runClientCommand, type ClientTransfer } from '../transfer/run.js';
import type { RemoteTarget } from '../transfer/target.js';
import { CLIENT_ENV_HELP, EXIT_CODES_HELP, LOCAL_HELP } from './help.js';

export const fetchTransfer: ClientTransfer = {
  name: 'fetch',
  flags: ['--force', '--recursive'],
  several: true,
  body: (ctx) => {
    if (ctx.flags.has('--recursive')) {
      if (ctx.targets.length > 1)
        throw usageError(
          'broker fetch --recursive takes one INSTANCE:FOLDER (and an optional LOCAL folder)',
          'fetch each folder with its own command',
        );
      return fetchFolder(ctx, ctx.flags.has('--force'));
    }
    const one = (target: RemoteTarget) =>
      download({
        ...ctx,
        target,
        force: ctx.flags.has('--force'),
        mode: 'fetch',
        local: ctx.local,
      });
    return ctx.targets.length > 1 ? fetchMany(ctx.targets, one) : one(ctx.target);
  },
};

export const fetchCommand: Command = {
  name: 'fetch',
  summary: 'stage a remote file locally (needs a read grant)',
  help: `Usage: broker fetch INSTANCE:PATH [LOCAL] [--force]
       broker fetch INSTANCE:PATH INSTANCE:PATH... [--force]
       broker fetch --recursive INSTANCE:FOLDER [LOCAL] [--force]

Downloads a file through the broker into the staging folder (or LOCAL), verifies its
size and sha256 against what the broker streamed, and records it in the CLI's state
folder. Fetching again when the remote file is unchanged transfers nothing. A refused
or failed fetch leaves nothing behind.

With several INSTANCE:PATH (no LOCAL), each file is fetched as if alone (its own
ticket, grant check and record), a few at a time, and staged at its own place; the
JSON answer lists each file's result under \`files\`. The command exits with the worst
failure among them (0 when all were fetched); the others are fetched all the same. An
argument that starts with \`NAME:\` is a remote file: write a local path like that as
\`./NAME:…\`.

With --recursive, every file below FOLDER (its subfolders too) is fetched the same
way, each file its own ticket, grant check and record, 4 at a time; the local tree
mirrors the folder: staged at <staging folder>/<instance>/<FOLDER>/…, or, with LOCAL,
at LOCAL/<path inside FOLDER>. Empty folders are not created. A tree it cannot mirror
(a name the broker refuses, two names that are one local path, a local file where a
folder must go or a local folder where a file must, more than 5000 files) is refused
before any file is fetched (exit 1). On a terminal one line shows the bytes done.

Options:
  --force      replace a local file that was edited since it was fetched (or that
               the broker did not stage); without it that is refused with exit 5
  --recursive  fetch every file below INSTANCE:FOLDER (see above)

Example:
  broker fetch personal:Documents/report.odt
  broker fetch personal:Documents/report.odt ./report.odt
  broker fetch personal:Notes/a.md personal:Notes/b.md personal:Notes/c.md
  broker fetch --recursive personal:Projects/site ./site

${LOCAL_HELP}

${CLIENT_ENV_HELP}
${EXIT_CODES_HELP}`,
  run: (args) => runClientCommand(fetchTransfer, args),
};
