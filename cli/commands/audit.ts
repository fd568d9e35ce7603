/**
 * `broker audit verify [--data-dir DIR]` (docs/contracts.md §6): recomputes the audit
 * chain and compares its head with audit.checkpoint. One JSON object on stdout; exit 0
 * intact, 4 corrupt (naming the first bad seq), 1 usage or unreadable directory.
 */
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CHECKPOINT_FILE } from '../../broker/audit/checkpoint.js';
import { LOG_FILE } from '../../broker/audit/log.js';
import { verifyAudit } from '../../broker/audit/verify.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { type Command, ExitCode } from '../command.js';

export interface AuditCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: () => string;
}

const HELP = `Usage: broker audit verify [--data-dir DIR]

Recomputes the hash chain of DIR/audit.log (every seq, prev and hash, and that each
line is in canonical form) and compares its head with DIR/audit.checkpoint, catching
an edited, deleted or reordered record and a truncated tail. Read-only; safe to run
beside a running broker.

Options:
  --data-dir DIR   the broker's data_dir (default: ./data)

Output: one JSON object on stdout.
  intact:  {"status":"ok","records":N,"head":{"seq":N,"hash":"…"}}
  corrupt: {"status":"corrupt","seq":N,"error":"…","next_step":"…"}

Exit codes: 0 intact · 1 usage error or no audit log in DIR · 4 corrupt

Example:
  broker audit verify --data-dir /var/lib/broker/data
`;

const CORRUPT_NEXT_STEP =
  'Treat records from this seq on as untrustworthy. Keep audit.log and audit.checkpoint as evidence, compare them with a backup, and investigate who could write to the data directory; the broker refuses to start on a log short of its checkpoint.';

export function createAuditCommand(io: AuditCommandIo): Command {
  const emit = (obj: Record<string, unknown>): void => io.stdout(`${JSON.stringify(obj)}\n`);
  const usage = (error: string, nextStep: string): number => {
    emit({ status: 'error', error, next_step: nextStep });
    io.stderr(`broker audit: ${error}\n`);
    return ExitCode.usage;
  };
  return {
    name: 'audit',
    summary: 'verify the hash-chained audit log (audit verify [--data-dir DIR])',
    help: HELP,
    run(args) {
      const parsed = parseVerifyArgs(args);
      if (!parsed.ok) return Promise.resolve(usage(parsed.error, 'Run `broker audit --help`.'));
      const dir = resolve(io.cwd(), parsed.dataDir);
      if (!isDirectory(dir)) {
        return Promise.resolve(
          usage(
            `data directory ${dir} does not exist`,
            "Pass the broker's data_dir with --data-dir DIR.",
          ),
        );
      }
      // Security: a missing log next to a checkpoint is a deleted log (exit 4), not a typo.
      if (!isFile(join(dir, LOG_FILE)) && !isFile(join(dir, CHECKPOINT_FILE))) {
        return Promise.resolve(
          usage(
            `no ${LOG_FILE} in ${dir}`,
            'Check --data-dir: it must be the data_dir of config.yaml, where the broker writes audit.log.',
          ),
        );
      }
      let result: ReturnType<typeof verifyAudit>;
      try {
        result = verifyAudit(dir);
      } catch (err) {
        return Promise.resolve(
          usage(
            `cannot read the audit files in ${dir}: ${err instanceof Error ? err.message : String(err)}`,
            'Run as a user that can read the data directory.',
          ),
        );
      }
      if (result.ok) {
        emit({ status: 'ok', records: result.records, head: result.head });
        io.stderr(`audit log intact: ${result.records} record(s), head seq ${result.head.seq}\n`);
        return Promise.resolve(ExitCode.ok);
      }
      emit({
        status: 'corrupt',
        seq: result.seq,
        error: result.reason,
        next_step: CORRUPT_NEXT_STEP,
      });
      io.stderr(`audit log CORRUPT at seq ${result.seq}: ${result.reason}\n`);
      return Promise.resolve(ExitCode.verification);
    },
  };
}

type VerifyArgs = { ok: true; dataDir: string } | { ok: false; error: string };

function parseVerifyArgs(args: readonly string[]): VerifyArgs {
  const [sub, ...rest] = args;
  if (sub !== 'verify') {
    return {
      ok: false,
      error: sub === undefined ? 'missing sub-command: verify' : `unknown sub-command "${sub}"`,
    };
  }
  const parsed = parseCommandArgs(rest, { 'data-dir': { type: 'string', multiple: true } }, false);
  if (!parsed.ok) {
    return { ok: false, error: describeProblem(parsed.problem, '--data-dir needs a directory') };
  }
  const given = (parsed.values['data-dir'] ?? []) as string[];
  if (given.includes('')) return { ok: false, error: '--data-dir needs a directory' };
  if (given.length > 1) return { ok: false, error: '--data-dir given twice' };
  return { ok: true, dataDir: given[0] ?? 'data' };
}

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
});
