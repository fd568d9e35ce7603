/**
 * Modes of the broker's own state: its data folder 0700, every file in it 0600, so no
 * other local user can read the grants, the decisions or the audit trail (issue 14.9).
 * Nothing here widens a mode: a mode is only ever narrowed (`mode & allowed`).
 * On a platform without uids (Windows) ownership is not compared.
 */
import { chmodSync, statSync } from 'node:fs';
import { CodedError } from './coded-error.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** The uid this process runs as; undefined where there are none. */
export function currentUid(): number | undefined {
  return process.getuid?.();
}

/** `0644`: a permission mode as `chmod` takes it. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/** What a path grants beyond `allowed`: its mode, owner, and whether this user owns it. */
export interface WideMode {
  path: string;
  mode: number;
  allowed: number;
  uid: number;
  /** This process's user owns it, so the broker can narrow it itself. */
  mine: boolean;
}

/** The path's mode when it grants more than `allowed`; undefined when private or absent. */
export function wideMode(path: string, allowed: number, uid = currentUid()): WideMode | undefined {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const mode = Number(st.mode) & 0o777;
  if ((mode & ~allowed) === 0) return undefined;
  const owner = Number(st.uid);
  return { path, mode, allowed, uid: owner, mine: uid === undefined || owner === uid };
}

/** A path as one shell word. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

/** The shell line that makes every path of `wide` private (one `chmod` per target mode). */
export function chmodLine(wide: readonly WideMode[]): string {
  const byMode = new Map<string, string[]>();
  for (const w of wide) {
    const target = octalMode(w.mode & w.allowed);
    byMode.set(target, [...(byMode.get(target) ?? []), shellWord(w.path)]);
  }
  return [...byMode].map(([mode, paths]) => `chmod ${mode} ${paths.join(' ')}`).join(' && ');
}

/** A data folder or file that others can read and this user cannot narrow. */
export class PrivateModeError extends CodedError<'not_private'> {
  override readonly name = 'PrivateModeError';
  constructor(message: string) {
    super('not_private', message);
  }
}

/**
 * Narrows `path` to `allowed` when it is wider; returns what it was (undefined when it
 * was private already, or absent). Security: a path owned by another user is not ours
 * to change, and the broker must not run with its state readable by others: that is a
 * PrivateModeError naming the path, its mode and the `chmod` to run.
 */
export function narrowMode(
  path: string,
  allowed: number,
  uid = currentUid(),
): WideMode | undefined {
  const wide = wideMode(path, allowed, uid);
  if (wide === undefined) return undefined;
  if (!wide.mine) {
    throw new PrivateModeError(
      `${path} is mode ${octalMode(wide.mode)} and belongs to uid ${wide.uid}, not to the broker's user (uid ${String(uid)}), so other users can read it; run \`${chmodLine([wide])}\` as its owner, or set data_dir to a folder the broker's user owns`,
    );
  }
  chmodSync(path, wide.mode & allowed);
  return wide;
}
