/**
 * Vitest's global setup: every temp folder the tests make (the stages, data folders and
 * configs under os.tmpdir(), the brokers' and CLIs' own) goes under one folder of this
 * run, removed when the run ends, so that a run leaves nothing behind in the machine's
 * temp folder. Workers and the processes they start inherit TMPDIR.
 *
 * A process that outlives the run or runs as another user must not inherit it: a real
 * Nextcloud a test restarts (its Apache and PHP run as www-data, which cannot write into
 * this run's folder, and keep running after the folder is gone), or occ. Those get the
 * machine's own TMPDIR back through `machineEnv`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where the machine's own TMPDIR is kept while a run's folder stands in for it ('' when unset). */
const MACHINE_TMPDIR = 'BROKER_TESTS_MACHINE_TMPDIR';

export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const run = mkdtempSync(join(tmpdir(), 'broker-tests-'));
  process.env[MACHINE_TMPDIR] = previous ?? '';
  process.env.TMPDIR = run;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    delete process.env[MACHINE_TMPDIR];
    rmSync(run, { recursive: true, force: true });
  };
}

/** `env` with the machine's own TMPDIR, for a process that must not use the run's folder. */
export function machineEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const machine = env[MACHINE_TMPDIR];
  if (machine === undefined) return env;
  const { [MACHINE_TMPDIR]: _kept, TMPDIR: _run, ...rest } = env;
  return machine === '' ? rest : { ...rest, TMPDIR: machine };
}
