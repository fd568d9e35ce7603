/**
 * Modes of the broker's own state: its data folder 0700, every file in it 0600, so no
 * other local user can read the grants, the decisions or the audit trail (issue 14.9).
 * Nothing here widens a mode: a mode is only ever narrowed (`mode & allowed`).
 * On a platform without uids (Windows) ownership is not compared.
 */
import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
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

/**
 * The path's mode when it grants more than `allowed`; undefined when private or absent.
 * Security: never through a symlink (`lstat`): a link in the data folder is refused
 * (`refuseSymlinks`), and its target's mode is never the broker's business.
 */
export function wideMode(path: string, allowed: number, uid = currentUid()): WideMode | undefined {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (st.isSymbolicLink()) throw symlinkRefused(path);
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

/** A data folder or file that others can read and this user cannot narrow, or a symlink. */
export class PrivateModeError extends CodedError<'not_private' | 'symlink'> {
  override readonly name = 'PrivateModeError';
  constructor(message: string, code: 'not_private' | 'symlink' = 'not_private') {
    super(code, message);
  }
}

function symlinkRefused(path: string): PrivateModeError {
  return new PrivateModeError(
    `${path} is a symlink; the broker never follows one in its data folder (it would change the mode of, and write its records into, whatever the link points to): remove the link, and set data_dir to the real folder if the folder itself is one`,
    'symlink',
  );
}

/**
 * Security: refuses (PrivateModeError `symlink`, naming the path) a data folder that is a
 * symlink, or that holds one. The broker narrows modes of, and writes into, what it finds
 * there; a link planted there (to the system's password file, say, with the broker run as
 * root) would be followed at start. Checked with `lstat`, before anything is opened.
 */
export function refuseSymlinks(dir: string): void {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (st.isSymbolicLink()) throw symlinkRefused(dir);
  if (!st.isDirectory()) return;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (lstatSync(path).isSymbolicLink()) throw symlinkRefused(path);
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
