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
import { CodedError } from '../../base/coded-error.js';
import { octalMode } from '../../base/private-files.js';

export type OwnerSocketErrorCode =
  | 'not_private' // the folder or socket is not this user's alone, or is not what it should be
  | 'no_broker' // nobody answers on the socket
  | 'in_use' // another broker answers on it
  | 'permission' // this user may not connect
  | 'timeout' // the broker did not answer in time
  | 'bad_answer' // the answer is not one this command reads
  | 'failed'; // any other socket failure

/** The owner socket cannot be used as it is; the message names the cause, `nextStep` the fix. */
export class OwnerSocketError extends CodedError<OwnerSocketErrorCode> {
  override readonly name = 'OwnerSocketError';
  constructor(
    code: OwnerSocketErrorCode,
    message: string,
    readonly nextStep: string,
  ) {
    super(code, message);
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
    throw new OwnerSocketError('not_private', `${dir} is not a folder`, 'set data_dir to a folder');
  }
  if (uid !== undefined && st.uid !== uid) {
    throw new OwnerSocketError(
      'not_private',
      `the data folder ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}); the owner socket is only for the broker's own user`,
      "run the command as the broker's user",
    );
  }
  if ((st.mode & OTHERS) !== 0) {
    throw new OwnerSocketError(
      'not_private',
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
      'not_private',
      `${path} is not a socket`,
      'remove it; the broker creates the owner socket when it starts',
    );
  }
  if (uid !== undefined && st.uid !== uid) {
    throw new OwnerSocketError(
      'not_private',
      `${path} belongs to uid ${st.uid}, not to this user (uid ${uid}); refusing to talk to it`,
      "run the command as the broker's user, and find out who created that socket",
    );
  }
}
