import { usageError } from './errors.js';

export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly flags: ReadonlySet<string>;
}

/** Splits `args` into positionals and the allowed `--flags`; anything else is a usage error. */
export function parseArgs(
  args: readonly string[],
  allowed: readonly string[],
  command: string,
): ParsedArgs {
  const positional: string[] = [];
  const flags = new Set<string>();
  let onlyPositional = false;
  for (const arg of args) {
    if (!onlyPositional && arg === '--') {
      onlyPositional = true;
    } else if (!onlyPositional && arg.startsWith('-') && arg !== '-') {
      if (!allowed.includes(arg)) {
        throw usageError(
          `unknown option ${arg} for broker ${command}`,
          `run \`broker ${command} --help\``,
        );
      }
      flags.add(arg);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length < 1 || positional.length > 2) {
    throw usageError(
      `broker ${command} takes INSTANCE:PATH and an optional local path`,
      `run \`broker ${command} --help\``,
    );
  }
  return { positional, flags };
}
