/**
 * Which broker the owner's commands talk to: the data folder of the configuration
 * `broker serve` runs with (--config FILE, else $BROKER_CONFIG, else ./config.yaml),
 * or, when none of those exists here, the demo's (`npm start` in this folder).
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

/**
 * The data folder of that configuration (only `data_dir` is read: no secrets needed), or
 * why it cannot be read (the message names the file or the key).
 */
export async function ownerDataDir(
  cwd: string,
  env: NodeJS.ProcessEnv,
  config: string | undefined,
): Promise<{ ok: true; dir: string } | { ok: false; error: string }> {
  const { dataDirOf, ConfigError } = await import('../../broker/config.js');
  try {
    return { ok: true, dir: dataDirOf(ownerConfigFile(cwd, env, config)) };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, error: err.message };
    throw err;
  }
}
