/**
 * Who may reach the owner socket. Security: Node cannot read the peer's credentials
 * (SO_PEERCRED) on a Unix socket, so the broker relies on file permissions instead:
 * the socket lives in data_dir, which must belong to the broker's user and grant
 * nothing to group or others (0700), and the socket itself is 0600. Only the broker's
 * user (and root) can then connect. Both ends check: the broker before it listens, the
 * owner's command before it connects (so it never sends a decision to a socket another
 * user planted).
 */
import { lstatSync, statSync } from 'node:fs';
import { octalMode } from '../../base/private-files.js';

/** The folder or socket is not private to this user; the message names the fix. */
export class OwnerSocketError extends Error {
  override readonly name = 'OwnerSocketError';
  constructor(
    message: string,
    readonly nextStep: string,
  ) {
    super(message);
  }
}

/** The mode bits beyond the owner's that the socket's folder must not have. */
const OTHERS = 0o077;

/**
 * Throws OwnerSocketError unless `dir` is a folder owned by `uid` that grants nothing to
 * group or others. `uid` undefined (no uids: Windows) skips the ownership check.
 */
export function checkSocketFolder(dir: string, uid: number | undefined): void {
  const st = statSync(dir);
  if (!st.isDirectory()) {
    throw new OwnerSocketError(`${dir} is not a folder`, 'set data_dir to a folder');
  }
  if (uid !== undefined && st.uid !== uid) {
    throw new OwnerSocketError(
      `the data folder ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}); the owner socket is only for the broker's own user`,
      "run the command as the broker's user",
    );
  }
  if ((st.mode & OTHERS) !== 0) {
    throw new OwnerSocketError(
      `the data folder ${dir} is mode ${octalMode(st.mode)}: other users could reach the owner socket`,
      `run \`chmod 700 ${dir}\``,
    );
  }
}

/** Throws OwnerSocketError unless `path` is a socket owned by `uid`. */
export function checkSocketFile(path: string, uid: number | undefined): void {
  const st = lstatSync(path);
  if (!st.isSocket()) {
    throw new OwnerSocketError(
      `${path} is not a socket`,
      'remove it; the broker creates the owner socket when it starts',
    );
  }
  if (uid !== undefined && st.uid !== uid) {
    throw new OwnerSocketError(
      `${path} belongs to uid ${st.uid}, not to this user (uid ${uid}); refusing to talk to it`,
      "run the command as the broker's user, and find out who created that socket",
    );
  }
}
