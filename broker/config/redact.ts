/**
 * Security: a common mistake is pasting a secret into the wrong place — as a key, as
 * an instance name, into `agent_env` or `agent_file`. Error messages echo such names
 * only when they cannot plausibly be a secret; otherwise they describe them.
 */

/** An unknown key or an invalid instance name, as shown in a message. */
export function showKey(key: string): string {
  return /^[A-Za-z0-9_.-]{1,20}$/.test(key)
    ? key
    : `<a key of ${key.length} characters, not shown>`;
}

/** An environment variable name: shown when it follows the UPPER_CASE convention. */
export function showEnvName(name: string): string | undefined {
  return /^[A-Z_][A-Z0-9_]{0,63}$/.test(name) ? name : undefined;
}

/** A file path as written in the config: shown when it looks like a path. */
export function showFilePath(written: string): boolean {
  return written.length <= 20 || /[/\\.]/.test(written);
}
