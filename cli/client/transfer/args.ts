import { parseCommandArgs } from '../../args.js';
import { usageError } from './errors.js';

export interface ClientArgs {
  readonly positional: readonly string[];
  /** The allowed `--flags` given. */
  readonly flags: ReadonlySet<string>;
}

/** `INSTANCE:` at the start of an argument: a remote target, not a local path. */
export const looksLikeTarget = (arg: string): boolean => /^[a-z0-9_-]{1,32}:/.test(arg);

/**
 * INSTANCE:PATH, an optional local path, and the allowed `--flags`; with `several`, also
 * two or more INSTANCE:PATH and no local path. Anything else is a usage error.
 */
export function parseClientArgs(
  args: readonly string[],
  allowed: readonly string[],
  command: string,
  several = false,
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
  const flags = new Set(names.filter((name) => values[name] === true).map((name) => `--${name}`));
  if (several && positionals.length >= 2 && positionals.slice(1).some(looksLikeTarget)) {
    const local = positionals.slice(1).find((arg) => !looksLikeTarget(arg));
    if (local !== undefined)
      throw usageError(
        `broker ${command} with several INSTANCE:PATH takes no local path ("${local}")`,
        `name only remote files (each is staged at its own place), or one file and its local path`,
      );
    return { positional: positionals, flags };
  }
  if (positionals.length < 1 || positionals.length > 2) {
    throw usageError(
      `broker ${command} takes INSTANCE:PATH and an optional local path`,
      `run \`broker ${command} --help\``,
    );
  }
  return { positional: positionals, flags };
}
