import { parseCommandArgs } from '../args.js';
import { usageError } from './errors.js';

export interface ClientArgs {
  readonly positional: readonly string[];
  /** The allowed `--flags` given. */
  readonly flags: ReadonlySet<string>;
}

/** INSTANCE:PATH, an optional local path, and the allowed `--flags`; anything else is a usage error. */
export function parseClientArgs(
  args: readonly string[],
  allowed: readonly string[],
  command: string,
): ClientArgs {
  const names = allowed.map((flag) => flag.replace(/^--/, ''));
  const parsed = parseCommandArgs(
    args,
    Object.fromEntries(names.map((name) => [name, { type: 'boolean' as const }])),
    true,
  );
  if (!parsed.ok) {
    throw usageError(
      `unknown option ${parsed.problem.arg} for broker ${command}`,
      `run \`broker ${command} --help\``,
    );
  }
  const { positionals, values } = parsed;
  if (positionals.length < 1 || positionals.length > 2) {
    throw usageError(
      `broker ${command} takes INSTANCE:PATH and an optional local path`,
      `run \`broker ${command} --help\``,
    );
  }
  const flags = new Set(names.filter((name) => values[name] === true).map((name) => `--${name}`));
  return { positional: positionals, flags };
}
