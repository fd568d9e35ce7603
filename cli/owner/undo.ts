/**
 * `broker undo SEQ [--dry-run] [--json]` and `broker undo --request N [--dry-run] [--json]`
 * (docs/contracts.md §6): the owner takes back what an agent's operation, or every
 * operation under the grants of request N, changed, from Nextcloud's own versions and
 * trash bin. The text goes over the owner socket as the command `undo …`, parsed by the
 * approval console's parser and run by the running broker, audited with actor `socket`
 * and shown in the room (or on the console) as every shell decision is.
 *
 * Why only through the running broker, never directly with the daemon stopped: undo
 * writes its own audit lines (the log has one writer, which holds audit.lock), sends its
 * requests with the instances' app passwords (the owner's shell needs no secrets), and
 * tells the approval room (only the daemon's bot can post there, encrypted to the pinned
 * devices). With the daemon stopped the command says to start it (exit 2).
 */
import type { OwnerResponse } from '../../broker/approval/owner/protocol.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { ExitCode, type Command } from '../command.js';
import { forTerminal, jsonLine } from '../terminal.js';
import { askRunningBroker, FINDING, processOwnerIo, type OwnerIo } from './owner.js';
import type { JsonObject } from '../../broker/base/protocol.js';
import type { UndoAnswer } from '../../broker/operations/undo/service.js';

const USAGE = 'broker undo SEQ | --request N [--dry-run] [--config FILE] [--json]';

/** How long the shell waits for the broker: an undo hashes and restores on Nextcloud. */
const UNDO_TIMEOUT_MS = 60 * 60_000;

const HELP = `Usage: broker undo SEQ [--dry-run] [--config FILE] [--json]
       broker undo --request N [--dry-run] [--config FILE] [--json]

Takes back what the agent changed, from Nextcloud's own versions and trash bin:
operation SEQ (the seq of its intent or outcome line in the audit log: broker audit
tail), or every operation done under the grants of request N, newest first. A
replaced file gets back the version it replaced, a new file or folder goes to the
trash bin, a move is moved back, a trashed item comes back from the trash bin, a new
calendar event goes to the calendar's trash bin, a checkout's lock is released. Undo
never deletes anything (what it replaces is kept as a version, what it removes goes to
the trash bin) and never guesses: what changed since (another content, the place
taken, the version gone) is left as it is and listed with what is there now.
--dry-run says what it would do and changes nothing. Revoke the request first (broker
revoke N) so the agent cannot change the files again meanwhile.

It runs in the running broker, which audits it (undo lines) and tells the approval
room; with the broker stopped, start it first.

${FINDING}

Options:
  --request N     everything under the grants of request N
  --dry-run       only say what would be done
  --config FILE   the broker's configuration (see above)
  --json          one JSON object on stdout instead of text

Exit codes: 0 all undone · 1 bad usage or configuration, no such record, or an audit
            log that does not verify · 2 no broker running, or Nextcloud unreachable
            (try again later) · 5 some operations left as they are (listed)

Example:
  broker undo --request 7 --dry-run
`;

type Target = { ok: true; text: string } | { ok: false; error: string };

/** The command the broker parses, from the arguments (the shared parser checks it again). */
function commandText(positionals: readonly string[], request: unknown, dryRun: boolean): Target {
  const tail = dryRun ? ' --dry-run' : '';
  if (typeof request === 'string') {
    if (positionals.length > 0) return { ok: false, error: `usage: ${USAGE}` };
    return { ok: true, text: `undo --request ${request}${tail}` };
  }
  if (positionals.length !== 1) return { ok: false, error: `usage: ${USAGE}` };
  return { ok: true, text: `undo ${positionals[0] ?? ''}${tail}` };
}

function jsonOf(
  response: OwnerResponse & { ok: true },
  undo: UndoAnswer & { ok: true },
): JsonObject {
  return {
    status:
      undo.exit === ExitCode.ok ? 'ok' : undo.exit === ExitCode.infrastructure ? 'failed' : 'left',
    message: response.text,
    target: undo.target,
    dry_run: undo.dryRun,
    items: undo.items,
    warnings: undo.warnings,
  };
}

export function undoCommand(io: OwnerIo): Command {
  const fail = (json: boolean, code: number, error: string, nextStep: string): number => {
    if (json) io.stdout(jsonLine({ status: 'failed', error, next_step: nextStep }));
    io.stderr(`broker undo: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
    return code;
  };
  return {
    name: 'undo',
    summary:
      'take back what the agent changed (undo SEQ | undo --request N), from versions and the trash bin',
    help: HELP,
    async run(args) {
      const json = args.includes('--json');
      const parsed = parseCommandArgs(
        args,
        {
          config: { type: 'string' },
          json: { type: 'boolean' },
          'dry-run': { type: 'boolean' },
          request: { type: 'string' },
        },
        true,
      );
      const usageNext = 'run `broker undo --help`';
      const seqNext =
        'give the seq of an operation (`broker audit tail` lists them) or --request N; see `broker undo --help`';
      if (!parsed.ok) {
        const error = describeProblem(parsed.problem, '--config and --request need a value');
        return fail(json, ExitCode.usage, error, usageNext);
      }
      const { values, positionals } = parsed;
      const text = commandText(positionals, values.request, values['dry-run'] === true);
      if (!text.ok) return fail(json, ExitCode.usage, text.error, usageNext);
      const response = await askRunningBroker(
        io,
        values.config,
        { op: 'command', text: text.text },
        (code, error, nextStep) => fail(json, code, error, nextStep),
        { timeoutMs: UNDO_TIMEOUT_MS },
      );
      if (typeof response === 'number') return response;
      // The shared parser refused the words (a bad SEQ): a usage error, said once, with
      // this command's next step (not the console's "help").
      if (!response.ok) return fail(json, ExitCode.usage, response.error, seqNext);
      const undo = response.undo;
      // The broker refused it (no such record, a log that does not verify), or has no
      // undo: said as every other failure of this command is.
      if (undo === undefined) return fail(json, ExitCode.usage, response.text, usageNext);
      if (!undo.ok) return fail(json, ExitCode.usage, undo.message, undo.nextStep);
      const exit = undo.exit;
      if (json) io.stdout(jsonLine(jsonOf(response, undo)));
      else {
        // Security: paths in the answer are the agent's; no control character reaches the
        // owner's terminal.
        const human = response.text.replace(/\n$/, '');
        io.stdout(`${human.split('\n').map(forTerminal).join('\n')}\n`);
      }
      return exit;
    },
  };
}

export const processUndoCommand: Command = undoCommand(processOwnerIo);
