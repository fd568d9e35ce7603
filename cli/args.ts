/**
 * Command-line arguments, parsed by node:util `parseArgs` in strict mode (unknown
 * options, a missing value, a value for a flag and unexpected positionals are all
 * refused). Its errors come back as a problem naming the argument, for each command to
 * word in its own usage message.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type ArgProblem =
  /** An option the command does not have (or a value given to a flag). */
  | { kind: 'unknown'; arg: string }
  /** An option without its value. */
  | { kind: 'missing'; arg: string }
  /** A positional argument where the command takes none. */
  | { kind: 'unexpected'; arg: string };

export type ParsedArgs =
  | {
      ok: true;
      values: Record<string, string | boolean | (string | boolean)[] | undefined>;
      positionals: string[];
    }
  | { ok: false; problem: ArgProblem };

/** A problem in one sentence: `missing` as the option's own words, the rest as unknown. */
export function describeProblem(problem: ArgProblem, missing: string): string {
  return problem.kind === 'missing' ? missing : `unknown argument "${problem.arg}"`;
}

/** The first `'…'` of one of node's messages (the argument it is about). */
function quoted(message: string): string | undefined {
  return /'([^']*)'/.exec(message)?.[1]?.replace(/ <value>$/, '');
}

export function parseCommandArgs(
  args: readonly string[],
  options: NonNullable<ParseArgsConfig['options']>,
  allowPositionals: boolean,
): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options,
      allowPositionals,
      strict: true,
    });
    return { ok: true, values, positionals };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    const arg = quoted(message) ?? message.split('\n')[0] ?? '';
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      return { ok: false, problem: { kind: 'unexpected', arg } };
    }
    if (
      code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' &&
      !/does not take an argument/.test(message)
    ) {
      return { ok: false, problem: { kind: 'missing', arg } };
    }
    if (
      code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'
    ) {
      return { ok: false, problem: { kind: 'unknown', arg } };
    }
    throw error;
  }
}
