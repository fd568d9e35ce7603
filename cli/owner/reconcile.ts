/**
 * `broker reconcile [--since DURATION|ISO] [--json] [--admin-audit FILE] [--config FILE]`
 * (docs/contracts.md §6, "broker reconcile"): compares what Nextcloud recorded of each
 * account's own changes with the audit log, and lists each change the broker did not
 * make. With the broker running it asks it over the owner socket (the daemon keeps the
 * one cursor); stopped, it does the same itself. `--admin-audit FILE` also checks every
 * file action (reads included) of the account in an admin_audit log against the request
 * ids the broker recorded.
 */
import { describeProblem, parseCommandArgs } from '../args.js';
import { type Command, ExitCode } from '../command.js';
import { CliError } from '../client/transfer/errors.js';
import { forTerminal, jsonLine } from '../terminal.js';
import type { OwnerIo } from './owner.js';
import { ownerConfigFile } from './owner-target.js';
import type { AdminAuditReport } from '../../broker/operations/reconcile/command.js';
import type { ReconcileReport } from '../../broker/operations/reconcile/report.js';

/** What the command reads and writes (the owner commands' own). */
export type ReconcileIo = OwnerIo;

const HELP = `Usage: broker reconcile [--since DURATION|ISO] [--json] [--admin-audit FILE] [--config FILE]

Compares Nextcloud's own record of what the broker's account did (the Activity app,
the account's changes one by one) with the audit log, and lists every change the
broker did not make as "unexplained" (time, type, path): a change made with the
broker's app password, or the account's login, outside the broker.

With the broker running, it asks the broker over <data_dir>/owner.sock, which keeps
one cursor: without --since the comparison starts where the last one ended (the
broker also compares every reconcile.interval, default 10m, and tells you in the
room). With the broker stopped, it reads Nextcloud and the log itself, with the same
cursor (it reads the configuration's app passwords then).

Options:
  --since DURATION|ISO  compare from this long ago (24h, 7d) or this time
                        (2026-12-01T00:00:00Z) instead of the cursor; the cursor stays,
                        and what it finds is answered here only (not told in the
                        room or counted again)
  --admin-audit FILE    also check an admin_audit log (Nextcloud's admin_audit app,
                        a copy of its audit.log): every file action of the account
                        (read, write, create, delete, rename) under a request id the
                        broker did not record is unexplained, reads included
  --json                one JSON object on stdout instead of text
  --config FILE         the broker's configuration (default: $BROKER_CONFIG, else
                        ./config.yaml, else the demo's)

Exit codes: 0 everything explained · 1 bad usage or configuration · 2 Nextcloud
            unreachable, or without the Activity app (nothing could be compared)
            · 4 unexplained changes found

Example:
  broker reconcile --since 24h --admin-audit ./audit.log
`;

/** A past time from `24h`/`7d` (before now) or an ISO date-time; undefined when neither. */
async function sinceOf(text: string, now: number): Promise<number | undefined> {
  const { tryParseDuration } = await import('../../broker/config/duration.js');
  const ms = tryParseDuration(text);
  if (ms !== undefined) return now - ms;
  if (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? at : undefined;
}

/** The reports from the running broker, or undefined when none runs for `dir`. */
async function askBroker(
  dir: string,
  since: number | undefined,
): Promise<ReconcileReport[] | undefined> {
  const { askOwner } = await import('../../broker/approval/owner/client.js');
  const { OwnerSocketError } = await import('../../broker/approval/owner/safety.js');
  try {
    const response = await askOwner(
      dir,
      { op: 'reconcile', ...(since === undefined ? {} : { since: new Date(since).toISOString() }) },
      { timeoutMs: 15 * 60_000 },
    );
    if (!response.ok) throw new CliError('infrastructure', response.error, response.next_step);
    return response.reports ?? [];
  } catch (error) {
    if (error instanceof OwnerSocketError && error.code === 'no_broker') return undefined;
    if (error instanceof OwnerSocketError)
      throw new CliError('infrastructure', error.message, error.nextStep);
    throw error;
  }
}

function exitOf(reports: readonly ReconcileReport[], admin: AdminAuditReport | undefined): number {
  if (reports.some((r) => r.unexplained.length > 0) || (admin?.unexplained.length ?? 0) > 0)
    return ExitCode.verification;
  if (reports.some((r) => r.status === 'off' || r.status === 'unreachable'))
    return ExitCode.infrastructure;
  return ExitCode.ok;
}

function humanReport(r: ReconcileReport): string[] {
  const who = `${r.instances.join(', ')} (${r.user})`;
  if (r.status === 'off' || r.status === 'unreachable')
    return [`${who}: not compared: ${r.problem ?? r.status}`];
  if (r.status === 'started')
    return [`${who}: started: changes from ${r.from ?? 'now'} on are compared from the next run`];
  const head = `${who}: ${r.rows} change${r.rows === 1 ? '' : 's'} since ${r.from ?? '?'}, ${r.unexplained.length} unexplained`;
  return [
    head,
    ...r.unexplained.map(
      (u) =>
        `  unexplained  ${u.time}  ${u.type}  ${u.old_path === undefined ? '' : `${u.old_path} → `}${u.path}`,
    ),
  ];
}

function humanAdmin(a: AdminAuditReport): string[] {
  return [
    `${a.file}: ${a.actions} file action${a.actions === 1 ? '' : 's'} of the account, ${a.unexplained.length} unexplained${a.pending.length > 0 ? `, ${a.pending.length} during an operation still running (run again)` : ''}${a.unreadable > 0 ? `, ${a.unreadable} unreadable lines` : ''}`,
    ...a.unexplained.map(
      (u) => `  unexplained  ${u.time}  ${u.method}  ${u.message}  (request ${u.req_id})`,
    ),
  ];
}

export function createReconcileCommand(io: ReconcileIo): Command {
  const who = 'broker reconcile';
  return {
    name: 'reconcile',
    summary: "list the account's changes in Nextcloud the broker did not make",
    help: HELP,
    async run(args) {
      const json = args.includes('--json');
      const fail = (code: number, error: string, nextStep: string): number => {
        if (json) io.stdout(jsonLine({ status: 'failed', error, next_step: nextStep }));
        io.stderr(`${who}: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
        return code;
      };
      const usageNext = `run \`${who} --help\``;
      const parsed = parseCommandArgs(
        args,
        {
          config: { type: 'string' },
          json: { type: 'boolean' },
          since: { type: 'string' },
          'admin-audit': { type: 'string' },
        },
        false,
      );
      if (!parsed.ok)
        return fail(
          ExitCode.usage,
          describeProblem(parsed.problem, 'an option needs its value'),
          usageNext,
        );
      const { values } = parsed;
      const sinceText = typeof values.since === 'string' ? values.since : undefined;
      const since = sinceText === undefined ? undefined : await sinceOf(sinceText, io.now());
      if (sinceText !== undefined && since === undefined)
        return fail(
          ExitCode.usage,
          `--since "${sinceText}" is neither a duration (24h, 7d) nor an ISO time`,
          usageNext,
        );
      const adminFile =
        typeof values['admin-audit'] === 'string' ? values['admin-audit'] : undefined;
      const file = ownerConfigFile(
        io.cwd(),
        io.env,
        typeof values.config === 'string' ? values.config : undefined,
      );
      const { loadConfig, ConfigError, configSecrets } = await import('../../broker/config.js');
      let config;
      try {
        config = loadConfig(file, io.env).config;
      } catch (error) {
        if (error instanceof ConfigError)
          return fail(
            ExitCode.usage,
            error.message,
            'fix the configuration (broker doctor says how)',
          );
        throw error;
      }
      let reports: ReconcileReport[];
      let admin: AdminAuditReport | undefined;
      try {
        reports =
          (await askBroker(config.data_dir, since)) ??
          (await (async () => {
            const { reconcileDirect } =
              await import('../../broker/operations/reconcile/command.js');
            const { createScrubber } = await import('../../broker/base/scrub.js');
            const scrub = createScrubber(
              configSecrets(config),
              [...config.instances.values()].map((i) => [i.username, i.app_password] as const),
            );
            return reconcileDirect(config, { ...(since === undefined ? {} : { since }), scrub });
          })());
        if (adminFile !== undefined) {
          const { checkAdminAuditFile } =
            await import('../../broker/operations/reconcile/command.js');
          try {
            admin = await checkAdminAuditFile(adminFile, config, since);
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
            return fail(
              ExitCode.usage,
              `cannot read ${adminFile} (${code})`,
              'give a copy of the admin_audit log this user can read',
            );
          }
        }
      } catch (error) {
        if (error instanceof CliError) return fail(error.exitCode, error.message, error.nextStep);
        const { AuditError } = await import('../../broker/audit/errors.js');
        if (error instanceof AuditError && error.code === 'locked')
          return fail(
            ExitCode.infrastructure,
            error.message,
            'a broker holds the audit log but does not answer on its owner socket: see its log',
          );
        throw error;
      }
      const exit = exitOf(reports, admin);
      if (json) {
        const status =
          exit === ExitCode.verification
            ? 'unexplained'
            : exit === ExitCode.ok
              ? 'ok'
              : 'not_compared';
        io.stdout(
          jsonLine({ status, reports, ...(admin === undefined ? {} : { admin_audit: admin }) }),
        );
      } else {
        // Security: paths and messages come from Nextcloud (names anyone with the account
        // chose): each line is escaped so no control character reaches the terminal.
        const lines = [
          ...reports.flatMap(humanReport),
          ...(admin === undefined ? [] : humanAdmin(admin)),
        ];
        io.stdout(`${lines.map(forTerminal).join('\n')}\n`);
      }
      return exit;
    },
  };
}

export const reconcileCommand: Command = createReconcileCommand({
  env: process.env,
  cwd: () => process.cwd(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  now: Date.now,
});
