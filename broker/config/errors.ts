/**
 * The one error type configuration loading throws. Every problem names the YAML key
 * (dotted path, e.g. `server.allowed_hosts`) and says how to fix it.
 *
 * Security: messages are built only from key names, file paths, environment variable
 * names and fixed text; a configured value (possibly a secret) is never interpolated.
 */
import { CodedError } from '../base/coded-error.js';
export type ConfigErrorCode =
  /** The config file (or a `_file` secret) does not exist or cannot be read. */
  | 'missing'
  /** The text is not valid YAML. */
  | 'syntax'
  /** A key is unknown, missing, or has a bad value. */
  | 'invalid';

export interface ConfigIssue {
  /** Dotted key path, e.g. `instances.personal.url`; `(file)` or `(yaml)` when no key applies. */
  readonly key: string;
  /** What is wrong and what to do about it. */
  readonly message: string;
}

export class ConfigError extends CodedError<ConfigErrorCode> {
  override readonly name = 'ConfigError';
  /** The first offending key. */
  readonly key: string;
  /** Every problem found, first one first. */
  readonly issues: readonly ConfigIssue[];

  constructor(code: ConfigErrorCode, issues: readonly [ConfigIssue, ...ConfigIssue[]]) {
    super(code, issues.map((i) => `${i.key}: ${i.message}`).join('\n'));
    this.key = issues[0].key;
    this.issues = issues;
  }

  static single(code: ConfigErrorCode, key: string, message: string): ConfigError {
    return new ConfigError(code, [{ key, message }]);
  }
}

/** `['instances', 'a', 'url']` → `instances.a.url`; array indexes as `[0]`. */
export function keyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(top level)' : out;
}
