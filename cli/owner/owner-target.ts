/**
 * Which broker the owner's commands talk to: the data folder of the configuration
 * `broker serve` runs with (--config FILE, else $BROKER_CONFIG, else ./config.yaml),
 * or, when none of those exists here, the demo's (`npm start` in this folder). The audit
 * commands (`audit tail`, `audit verify`) find the log the same way unless --data-dir
 * names the folder.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configFile } from './config-arg.js';

// Where the demo writes its configuration (broker/demo/run.ts, DEMO_DATA_FOLDER and
// DEMO_CONFIG_FILE); named here so that this light command does not load the daemon.
const DEMO_CONFIG = join('data', 'demo', 'config.yaml');

export function ownerConfigFile(
  cwd: string,
  env: NodeJS.ProcessEnv,
  config: string | undefined,
): string {
  const chosen = configFile(cwd, env, config);
  const named = config !== undefined || (env.BROKER_CONFIG ?? '') !== '';
  if (named || existsSync(chosen)) return chosen;
  const demo = resolve(cwd, DEMO_CONFIG);
  return existsSync(demo) ? demo : chosen;
}

export type DataDirFound =
  { ok: true; dir: string } | { ok: false; error: string; nextStep: string };

const POINT_AT_IT =
  "run it in the folder of the broker's config.yaml, or point at it with --config FILE (or BROKER_CONFIG=FILE in the environment); for the demo, run it in the folder where npm start runs";

/** Why no configuration was found, in the words of how it was looked for. */
function missing(file: string, cwd: string, env: NodeJS.ProcessEnv, config: string | undefined) {
  if (config !== undefined) {
    return {
      error: `--config ${config}: there is no file ${file}`,
      nextStep: 'check the path (a relative one is taken from this folder)',
    };
  }
  if ((env.BROKER_CONFIG ?? '') !== '') {
    return {
      error: `$BROKER_CONFIG names ${file}, which does not exist`,
      nextStep: 'set BROKER_CONFIG to the configuration `broker serve` uses, or pass --config FILE',
    };
  }
  return {
    error: `no config.yaml in ${cwd}, and no demo here (${DEMO_CONFIG})`,
    nextStep: POINT_AT_IT,
  };
}

/**
 * The data folder of that configuration (only `data_dir` is read: no secrets needed), or
 * why it cannot be read and how to point at the right one.
 */
export async function ownerDataDir(
  cwd: string,
  env: NodeJS.ProcessEnv,
  config: string | undefined,
): Promise<DataDirFound> {
  const file = ownerConfigFile(cwd, env, config);
  if (!existsSync(file)) return { ok: false, ...missing(file, cwd, env, config) };
  const { dataDirOf, ConfigError } = await import('../../broker/config.js');
  try {
    return { ok: true, dir: dataDirOf(file) };
  } catch (err) {
    if (err instanceof ConfigError) {
      return {
        ok: false,
        error: err.message,
        nextStep: `fix ${file} (\`broker doctor --config ${file}\` names what is wrong)`,
      };
    }
    throw err;
  }
}

/** The data folder of the audit commands: --data-dir DIR, else the configuration's. */
export function auditDataDir(
  cwd: string,
  env: NodeJS.ProcessEnv,
  given: { dataDir?: string | undefined; config?: string | undefined },
): Promise<DataDirFound> {
  if (given.dataDir !== undefined) {
    return Promise.resolve({ ok: true, dir: resolve(cwd, given.dataDir) });
  }
  return ownerDataDir(cwd, env, given.config);
}
