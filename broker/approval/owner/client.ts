/**
 * The owner's end of the owner socket: sends one request to the broker that keeps its
 * state in `dir` and reads its one answer. Used by `broker approve`, `deny`, `revoke`,
 * `status` and `grants`.
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import { currentUid } from '../../base/private-files.js';
import { OWNER_SOCKET_FILE, type OwnerRequest, type OwnerResponse } from './protocol.js';
import { checkSocketFile, checkSocketFolder, OwnerSocketError } from './safety.js';

/** Longest answer read (a `status` of many grants); more is a broken broker. */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export interface AskOptions {
  /** How long to wait for the answer (default 30 s: an approval writes the audit log). */
  readonly timeoutMs?: number;
  /** This user's uid (default this process's). */
  readonly uid?: number | undefined;
}

const START_IT = 'start it with `broker serve` (or `npm start`), with the same --config';

function noBroker(dir: string): OwnerSocketError {
  return new OwnerSocketError('no_broker', `no broker is running for data folder ${dir}`, START_IT);
}

/** Asks the running broker; throws OwnerSocketError naming the cause and the fix. */
export async function askOwner(
  dir: string,
  request: OwnerRequest,
  options: AskOptions = {},
): Promise<OwnerResponse> {
  const uid = 'uid' in options ? options.uid : currentUid();
  const path = join(dir, OWNER_SOCKET_FILE);
  try {
    checkSocketFolder(dir, uid);
    checkSocketFile(path, uid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw noBroker(dir);
    throw err;
  }
  const text = await exchange(
    path,
    `${JSON.stringify(request)}\n`,
    options.timeoutMs ?? 30_000,
    dir,
  );
  try {
    return JSON.parse(text) as OwnerResponse;
  } catch {
    throw new OwnerSocketError(
      'bad_answer',
      'the broker sent an answer this command cannot read',
      'use the `broker` of the same version as the running broker',
    );
  }
}

function exchange(path: string, line: string, timeoutMs: number, dir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let answer = '';
    socket.setEncoding('utf8');
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(
        new OwnerSocketError(
          'timeout',
          `the broker for ${dir} did not answer within ${Math.round(timeoutMs / 1000)} s`,
          'see the broker log; the command may still have been applied: run `broker status`',
        ),
      );
    });
    socket.once('connect', () => socket.write(line));
    socket.on('data', (chunk: string) => {
      answer += chunk;
      if (answer.length > MAX_RESPONSE_BYTES) socket.destroy();
    });
    socket.once('end', () => resolve(answer.trimEnd()));
    socket.once('error', (err: NodeJS.ErrnoException) => {
      // Refused: the socket file is a crashed broker's; nobody listens there.
      if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') reject(noBroker(dir));
      else if (err.code === 'EACCES') {
        reject(
          new OwnerSocketError(
            'permission',
            `permission denied on ${path}`,
            "run the command as the broker's user",
          ),
        );
      } else
        reject(
          new OwnerSocketError(
            'failed',
            `the owner socket ${path} failed: ${err.message}`,
            START_IT,
          ),
        );
    });
  });
}
