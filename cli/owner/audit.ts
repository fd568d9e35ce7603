/**
 * `broker audit verify [--data-dir DIR | --config FILE] [--anchor SEQ:HASH]…` (docs/contracts.md §6):
 * recomputes the audit chain, compares its head with audit.checkpoint and each record an
 * anchor names with the anchor's hash. One JSON object on stdout; exit 0 intact, 4
 * corrupt (naming the first bad seq, and the anchor when one fails), 1 usage or
 * unreadable directory.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { type Anchor, anchorText, parseAnchor } from '../../broker/audit/anchor-text.js';
import { CHECKPOINT_FILE } from '../../broker/audit/checkpoint.js';
import { LOG_FILE } from '../../broker/audit/log.js';
import { verifyAudit } from '../../broker/audit/verify.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { type Command, ExitCode } from '../command.js';
import { forTerminal } from '../terminal.js';
import { runAuditTail, TAIL_USAGE } from './audit-tail.js';
import { auditDataDir } from './owner-target.js';
import type { JsonObject } from '../../broker/base/protocol.js';

export interface AuditCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: () => string;
  /** For \`audit tail\` (finds data_dir through the config, like \`broker serve\`). */
  env?: NodeJS.ProcessEnv;
  /** For \`audit tail --follow\`: resolves when it should stop. */
  stopped?: () => Promise<void>;
}

const HELP = `Usage: broker audit verify [--config FILE | --data-dir DIR] [--anchor SEQ:HASH]…
       ${TAIL_USAGE}

Recomputes the hash chain of DIR/audit.log (every seq, prev and hash, and that each
line is in canonical form) and compares its head with DIR/audit.checkpoint, catching
an edited, deleted or reordered record and a truncated tail. Read-only; safe to run
beside a running broker.

Someone who can write DIR can also rewrite the whole history and the checkpoint to
match. The broker posts its head to the approval room ("audit anchor SEQ:HASH") after
each decision and at least every audit.anchor_interval; pass those anchors to prove
that record SEQ still has that hash, i.e. that nothing up to SEQ was rewritten or cut.

DIR is --data-dir, else data_dir of the configuration \`broker serve\` uses (--config
FILE, $BROKER_CONFIG, ./config.yaml, or the demo's ./data/demo/config.yaml), as for
\`audit tail\` and the owner's commands.

Options:
  --config FILE        the broker's configuration, whose data_dir is read (nothing else)
  --data-dir DIR       or: the broker's data_dir itself
  --anchor SEQ:HASH    an anchor from the room (repeatable; the full 64-digit hash)

Output: one JSON object on stdout.
  intact:  {"status":"ok","records":N,"head":{"seq":N,"hash":"…"},"anchors":K}
  corrupt: {"status":"corrupt","seq":N,"anchor":"SEQ:HASH","error":"…","next_step":"…"}
  ("anchors" and "anchor" only when --anchor was given)
  Either may add "schema":{"count":N,"first":[{"seq":N,"event":"…","problem":"…"}]}:
  records whose event this version does not read as written (a misspelt or newer
  event, a missing field). They are not a chain break and do not change the exit code.

Exit codes: 0 intact · 1 usage error or no audit log in DIR · 4 corrupt

\`audit tail\` prints the newest N records (default 20), one line each for a person
(time, seq, event, the record's fields), or with --json the stored JSON lines;
--follow keeps printing new records until Ctrl-C. It reads DIR/audit.log directly
(works while the broker is stopped); DIR is found as for verify. Exit codes: 0 shown ·
1 usage error or no log.

Examples:
  broker audit verify --data-dir /var/lib/broker/data --anchor 1234:<hash from the room>
  broker audit tail -n 20 --config /etc/broker/config.yaml
`;

const CORRUPT_NEXT_STEP =
  'Treat records from this seq on as untrustworthy. Keep audit.log and audit.checkpoint as evidence, compare them with a backup, and investigate who could write to the data directory; the broker refuses to start on a log short of its checkpoint.';

const ANCHOR_NEXT_STEP =
  'The log on this host no longer holds what the approval room saw: it was rewritten or cut on the host, checkpoint included. Treat the whole log as untrustworthy and the broker host as compromised; keep audit.log and audit.checkpoint as evidence, and compare them with a backup that verifies with this anchor.';

export function createAuditCommand(io: AuditCommandIo): Command {
  const emit = (obj: JsonObject): void => io.stdout(`${JSON.stringify(obj)}\n`);
  const usage = (error: string, nextStep: string): number => {
    emit({ status: 'error', error, next_step: nextStep });
    io.stderr(`broker audit: ${error}\n`);
    return ExitCode.usage;
  };
  async function verify(args: readonly string[]): Promise<number> {
    const parsed = parseVerifyArgs(args);
    if (!parsed.ok) return usage(parsed.error, 'Run `broker audit --help`.');
    const found = await auditDataDir(io.cwd(), io.env ?? process.env, parsed);
    if (!found.ok) return usage(found.error, `${found.nextStep}; or --data-dir DIR.`);
    const dir = found.dir;
    if (!isDirectory(dir)) {
      return usage(
        `data directory ${dir} does not exist`,
        "Pass the broker's data_dir with --data-dir DIR (or its configuration with --config FILE).",
      );
    }
    // Security: a missing log next to a checkpoint is a deleted log (exit 4), not a typo.
    if (!isFile(join(dir, LOG_FILE)) && !isFile(join(dir, CHECKPOINT_FILE))) {
      return usage(
        `no ${LOG_FILE} in ${dir}`,
        'Check --config or --data-dir: it must be the data_dir of config.yaml, where the broker writes audit.log.',
      );
    }
    let result: ReturnType<typeof verifyAudit>;
    try {
      result = verifyAudit(dir, parsed.anchors);
    } catch (err) {
      return usage(
        `cannot read the audit files in ${dir}: ${err instanceof Error ? err.message : String(err)}`,
        'Run as a user that can read the data directory.',
      );
    }
    const given = parsed.anchors.length > 0;
    // Apart from the chain: records whose event this version does not read (never corrupt).
    const schema = result.schema.count > 0 ? { schema: result.schema } : {};
    const first = result.schema.first[0];
    if (first !== undefined) {
      io.stderr(
        `${result.schema.count} record(s) with an event this version does not read as written (not a chain break); first: seq ${first.seq} ${forTerminal(first.event)}: ${forTerminal(first.problem)}\n`,
      );
    }
    if (result.ok) {
      emit({
        status: 'ok',
        records: result.records,
        head: result.head,
        ...(given ? { anchors: parsed.anchors.length } : {}),
        ...schema,
      });
      io.stderr(`audit log intact: ${result.records} record(s), head seq ${result.head.seq}\n`);
      return ExitCode.ok;
    }
    const anchor = result.anchor;
    emit({
      status: 'corrupt',
      seq: result.seq,
      ...(anchor === undefined ? {} : { anchor: anchorText(anchor) }),
      error: result.reason,
      next_step: anchor === undefined ? CORRUPT_NEXT_STEP : ANCHOR_NEXT_STEP,
      ...schema,
    });
    io.stderr(`audit log CORRUPT at seq ${result.seq}: ${result.reason}\n`);
    return ExitCode.verification;
  }

  return {
    name: 'audit',
    summary: 'verify the audit log, or show its newest records (audit verify|tail)',
    help: HELP,
    run(args) {
      if (args[0] === 'tail') {
        return runAuditTail(args.slice(1), {
          ...io,
          env: io.env ?? process.env,
          ...(io.stopped === undefined ? {} : { stopped: io.stopped }),
        });
      }
      return verify(args);
    },
  };
}

type VerifyArgs =
  { ok: true; dataDir?: string; config?: string; anchors: Anchor[] } | { ok: false; error: string };

function parseVerifyArgs(args: readonly string[]): VerifyArgs {
  const [sub, ...rest] = args;
  if (sub !== 'verify') {
    return {
      ok: false,
      error:
        sub === undefined
          ? 'missing sub-command: verify or tail'
          : `unknown sub-command "${sub}" (verify or tail)`,
    };
  }
  const parsed = parseCommandArgs(
    rest,
    {
      'data-dir': { type: 'string', multiple: true },
      config: { type: 'string' },
      anchor: { type: 'string', multiple: true },
    },
    false,
  );
  if (!parsed.ok) {
    const arg = parsed.problem.arg;
    const missing = arg.startsWith('--anchor')
      ? `--anchor needs ${ANCHOR_FORMAT}`
      : arg.startsWith('--config')
        ? '--config needs a file'
        : '--data-dir needs a directory';
    return { ok: false, error: describeProblem(parsed.problem, missing) };
  }
  const given = (parsed.values['data-dir'] ?? []) as string[];
  if (given.includes('')) return { ok: false, error: '--data-dir needs a directory' };
  if (given.length > 1) return { ok: false, error: '--data-dir given twice' };
  const config = parsed.values.config as string | undefined;
  if (config === '') return { ok: false, error: '--config needs a file' };
  if (config !== undefined && given.length > 0)
    return { ok: false, error: 'give --config or --data-dir, not both' };
  const anchors: Anchor[] = [];
  for (const text of (parsed.values.anchor ?? []) as string[]) {
    const anchor = parseAnchor(text);
    if (anchor === undefined) {
      return {
        ok: false,
        error: `--anchor ${JSON.stringify(text)} is not ${ANCHOR_FORMAT}`,
      };
    }
    anchors.push(anchor);
  }
  return {
    ok: true,
    ...(given[0] === undefined ? {} : { dataDir: given[0] }),
    ...(config === undefined ? {} : { config }),
    anchors,
  };
}

const ANCHOR_FORMAT =
  'SEQ:HASH, the record number and its full 64-digit hash as posted after "audit anchor" in the approval room';

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export const auditCommand: Command = createAuditCommand({
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  cwd: () => process.cwd(),
  env: process.env,
  stopped: () =>
    new Promise((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    }),
});
