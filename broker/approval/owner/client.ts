/**
 * The owner's end of the owner socket: sends one request to the broker that keeps its
 * state in `dir` and reads its one answer (`broker approve`, `deny`, `revoke`, `status`,
 * `grants`, `pins`, `unpin`), or holds `broker pair`'s conversation (`pairOwner`).
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import { currentUid } from '../../base/private-files.js';
import {
  OWNER_SOCKET_FILE,
  PairLineSchema,
  parseLine,
  type OwnerRequest,
  type OwnerResponse,
  type PairAnswer,
  type PairLine,
} from './protocol.js';
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

/** The socket of the broker for `dir`, once both ends' checks pass (safety.ts). */
function safeSocket(dir: string, options: AskOptions): string {
  const uid = 'uid' in options ? options.uid : currentUid();
  const path = join(dir, OWNER_SOCKET_FILE);
  try {
    checkSocketFolder(dir, uid);
    checkSocketFile(path, uid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw noBroker(dir);
    throw err;
  }
  return path;
}

/** Asks the running broker; throws OwnerSocketError naming the cause and the fix. */
export async function askOwner(
  dir: string,
  request: OwnerRequest,
  options: AskOptions = {},
): Promise<OwnerResponse> {
  const path = safeSocket(dir, options);
  const text = await exchange(
    path,
    `${JSON.stringify(request)}\n`,
    options.timeoutMs ?? 30_000,
    dir,
  );
  try {
    return JSON.parse(text) as OwnerResponse;
  } catch {
    throw badAnswer();
  }
}

function badAnswer(): OwnerSocketError {
  return new OwnerSocketError(
    'bad_answer',
    'the broker sent an answer this command cannot read',
    'use the `broker` of the same version as the running broker',
  );
}

/**
 * `broker pair`'s conversation with the broker for `dir`: each line the broker sends
 * goes to `onLine` as it comes, and its answer (if any) is sent back once given.
 * Resolves with the last line, once every `onLine` has settled.
 * Only the first line has a deadline; then the pairing's own timers end it.
 */
export function pairOwner(
  dir: string,
  expect: string | undefined,
  onLine: (line: PairLine) => Promise<PairAnswer | undefined>,
  options: AskOptions = {},
): Promise<PairLine> {
  const path = safeSocket(dir, options);
  const request: OwnerRequest = { op: 'pair', ...(expect === undefined ? {} : { expect }) };
  return new Promise((resolve, reject) => {
    let last: PairLine | undefined;
    let buffered = '';
    const pending: Promise<void>[] = [];
    const socket = connected(
      path,
      `${JSON.stringify(request)}\n`,
      options.timeoutMs ?? 30_000,
      dir,
      reject,
    );
    socket.on('data', (chunk: string) => {
      socket.setTimeout(0);
      buffered += chunk;
      for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
        const line = parseLine(buffered.slice(0, end), PairLineSchema);
        buffered = buffered.slice(end + 1);
        if (line === undefined) {
          socket.destroy();
          reject(badAnswer());
          return;
        }
        last = line;
        // Not one after another: the last line must reach `onLine` while it still waits
        // for the owner's answer to an earlier one (the pairing ended meanwhile).
        pending.push(
          onLine(line).then((answer) => {
            if (answer !== undefined && !socket.destroyed) {
              socket.write(`${JSON.stringify(answer)}\n`);
            }
          }),
        );
      }
    });
    socket.once('end', () => {
      void Promise.all(pending).then(
        () => (last === undefined ? reject(badAnswer()) : resolve(last)),
        reject,
      );
    });
  });
}

/** A connection to the socket at `path` that sent `line`; errors go to `reject`. */
function connected(
  path: string,
  line: string,
  timeoutMs: number,
  dir: string,
  reject: (err: OwnerSocketError) => void,
): ReturnType<typeof connect> {
  const socket = connect(path);
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
  socket.once('error', (err: NodeJS.ErrnoException) => reject(socketFailure(err, path, dir)));
  return socket;
}

function socketFailure(err: NodeJS.ErrnoException, path: string, dir: string): OwnerSocketError {
  // Refused: the socket file is a crashed broker's; nobody listens there.
  if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') return noBroker(dir);
  if (err.code === 'EACCES') {
    return new OwnerSocketError(
      'permission',
      `permission denied on ${path}`,
      "run the command as the broker's user",
    );
  }
  return new OwnerSocketError(
    'failed',
    `the owner socket ${path} failed: ${err.message}`,
    START_IT,
  );
}

function exchange(path: string, line: string, timeoutMs: number, dir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connected(path, line, timeoutMs, dir, reject);
    let answer = '';
    socket.on('data', (chunk: string) => {
      answer += chunk;
      if (answer.length > MAX_RESPONSE_BYTES) socket.destroy();
    });
    socket.once('end', () => resolve(answer.trimEnd()));
  });
}
