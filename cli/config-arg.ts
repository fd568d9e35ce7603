import { resolve } from 'node:path';

/** The one option of `serve`, `start` and `doctor`: `--config FILE` (or `--config=FILE`). */
export function parseConfigArg(
  args: readonly string[],
): { ok: true; config?: string } | { ok: false; error: string } {
  let config: string | undefined;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] ?? '';
    if (arg === '--config') {
      const value = args[i + 1];
      if (value === undefined || value.startsWith('--'))
        return { ok: false, error: '--config needs a file' };
      config = value;
      i += 1;
    } else if (arg.startsWith('--config=')) {
      config = arg.slice('--config='.length);
    } else {
      return { ok: false, error: `unknown argument "${arg}"` };
    }
  }
  return config === undefined ? { ok: true } : { ok: true, config };
}

/** The config file: --config, else $BROKER_CONFIG, else ./config.yaml (DESIGN §9). */
export function configFile(
  cwd: string,
  env: NodeJS.ProcessEnv,
  config: string | undefined,
): string {
  return resolve(cwd, config ?? env.BROKER_CONFIG ?? 'config.yaml');
}
