import { resolve } from 'node:path';
import { describeProblem, parseCommandArgs } from '../args.js';

/** The one option of `serve`, `start` and `doctor`: `--config FILE` (or `--config=FILE`). */
export function parseConfigArg(
  args: readonly string[],
): { ok: true; config?: string } | { ok: false; error: string } {
  const parsed = parseCommandArgs(args, { config: { type: 'string' } }, false);
  if (!parsed.ok)
    return { ok: false, error: describeProblem(parsed.problem, '--config needs a file') };
  const config = parsed.values.config;
  return typeof config === 'string' ? { ok: true, config } : { ok: true };
}

/** The config file: --config, else $BROKER_CONFIG, else ./config.yaml (docs/contracts.md §6). */
export function configFile(
  cwd: string,
  env: NodeJS.ProcessEnv,
  config: string | undefined,
): string {
  return resolve(cwd, config ?? env.BROKER_CONFIG ?? 'config.yaml');
}
