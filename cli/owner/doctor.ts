/**
 * `broker doctor [--config FILE]`: checks a configuration against the real world
 * (data folder, audit log, each Nextcloud, the Matrix room) and prints a checklist.
 */
import { configFile, parseConfigArg } from './config-arg.js';
import type { DoctorDeps } from '../../broker/doctor/run.js';
import type { Command } from '../command.js';
import { usageFailure } from '../usage.js';

const HELP = `Usage: broker doctor [--config FILE]

Checks a configuration against the real world and prints a checklist (✓ passed,
✗ failed with the fix, ! warning, – not checked because an earlier check failed):
  - the configuration loads (warnings shown);
  - data_dir is writable; it and the broker's files in it are private (0700, 0600),
    else each wider one is named with the chmod that fixes it; an existing audit log
    verifies;
  - each Nextcloud instance: reachable (status.php), the app password accepted (exactly
    one authenticated request, never retried: Nextcloud throttles failed logins), the
    trash bin (files.undelete) and file locking (files.locking, files_lock app) enabled;
  - the broker's account on each instance: not an administrator (else ✗), what it
    reaches (each top-level entry with its owner and permissions; ! when it owns them:
    then it is someone's own account, see the user guide, "A dedicated account");
  - reconciliation: the Activity app answers (without it reconciliation is off),
    reconcile.interval, and the account's stream shows the broker's own last change;
  - with approval: matrix, the room: bot token valid, bot and approver joined, room
    invite-only and not encrypted.
Safe beside a running broker: it changes nothing, and records the ids of its own
requests to Nextcloud in the audit log (through the running broker, or directly when
it is stopped) like the broker's own. Secrets are never printed.

Options:
  --config FILE   the configuration (default: $BROKER_CONFIG, else ./config.yaml)

Exit codes: 0 all checks passed · 1 bad usage or the configuration does not load ·
            2 something outside the broker is wrong (see the ✗ lines)

Example:
  broker doctor --config /etc/broker/config.yaml
`;

export interface DoctorIo {
  env: NodeJS.ProcessEnv;
  cwd: () => string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Overrides for tests (timeouts, the Matrix client). */
  deps?: Partial<Omit<DoctorDeps, 'env'>>;
}

export function createDoctorCommand(io: DoctorIo): Command {
  return {
    name: 'doctor',
    summary: 'check a configuration against the servers (doctor [--config FILE])',
    help: HELP,
    async run(args) {
      const parsed = parseConfigArg(args);
      if (!parsed.ok) {
        return usageFailure(io, 'broker doctor', parsed.error, 'run `broker doctor --help`');
      }
      const file = configFile(io.cwd(), io.env, parsed.config);
      const { runDoctor } = await import('../../broker/doctor/run.js');
      const report = await runDoctor(file, { ...io.deps, env: io.env });
      io.stdout(report.text);
      return report.exitCode;
    },
  };
}

export const doctorCommand: Command = createDoctorCommand({
  env: process.env,
  cwd: () => process.cwd(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
