/**
 * The owner socket (`<data_dir>/owner.sock`): the approval console's commands from any
 * shell of the broker's user (`broker approve 3`, `broker grants`, …). It is one more
 * channel into the same approval engine: a command is parsed by parser.ts and applied
 * by engine.ts, audited as the console's are, with actor `socket`, and shown where the
 * owner watches (the console, or the room) naming the shell as its source. It also
 * lists and removes pinned devices and runs `broker pair` (pair-conversation.ts).
 *
 * Start-up: a socket file left by a crashed broker (connecting is refused) is replaced;
 * one a live broker answers on is left alone and this start fails. (The audit log's
 * lock already refuses a second broker on the same data folder; this is the second
 * line.)
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Clock } from '../../base/domain.js';
import { errorLine } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import { currentUid } from '../../base/private-files.js';
import type { ApprovalStore } from '../ports.js';
import type { Reply } from '../reply.js';
import type { ApprovalEngine } from '../engine.js';
import { parseCommand } from '../parser.js';
import {
  grantJson,
  MAX_REQUEST_BYTES,
  OWNER_SOCKET_FILE,
  parseOwnerRequest,
  pendingJson,
  type OwnerRequest,
  type OwnerResponse,
} from './protocol.js';
import { checkSocketFolder, OwnerSocketError } from './safety.js';
import type { Command } from '../command.js';
import type { PairingDesk } from '../pairing/desk.js';
import type { ApproverPins } from '../pairing/pins.js';
import { pairOverSocket } from './pair-conversation.js';
import { pinsAnswer, unpinAnswer } from './pin-answers.js';
import { shellDecision } from './shell-decisions.js';
import type { ReconcileReport } from '../../operations/reconcile/report.js';

/** The actor (and channel) the audit records for a decision made over the socket. */
export const SOCKET_ACTOR = 'socket';

/** How long a client may take to send its one line. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface OwnerSocketDeps {
  readonly dir: string;
  readonly engine: Pick<ApprovalEngine, 'apply'>;
  /**
   * Shows a decision made here where the owner watches (the console, or the room), so
   * none is made unseen. Failures are logged, never the command's.
   */
  readonly show?: (text: string, html: string) => Promise<void>;
  /** The approver's pins and the pairing desk (an encrypted room only). */
  readonly pins?: Pick<ApproverPins, 'entries' | 'unpin'> | undefined;
  readonly pairing?: Pick<PairingDesk, 'open'> | undefined;
  readonly store: Pick<ApprovalStore, 'activeGrants' | 'pendingRequests'>;
  readonly now: Clock;
  readonly pendingTimeout: number;
  readonly logger: Logger;
  readonly lastUsed?: (grantId: number) => number | undefined;
  /** The broker's uid (default this process's); tests pass another to see a refusal. */
  readonly uid?: number | undefined;
  /** A reconciliation now (`broker reconcile`): every account's, or `instance`'s. */
  readonly reconcile?: (since: number | undefined, instance?: string) => Promise<ReconcileReport[]>;
  /** Records `broker doctor`'s request ids of a configured instance; false: not written. */
  readonly recordRequests?: (instance: string, ids: readonly string[]) => Promise<boolean>;
}

/** Resolves true when something accepts connections on `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

export class OwnerSocket {
  readonly path: string;
  #server: Server | undefined;
  /** `broker pair` conversations, which wait on the owner and end with the broker. */
  readonly #pairings = new Set<Socket>();

  readonly #deps: OwnerSocketDeps;

  constructor(deps: OwnerSocketDeps) {
    this.#deps = deps;
    this.path = join(deps.dir, OWNER_SOCKET_FILE);
  }

  /** Listens; throws OwnerSocketError when the folder is unsafe or a live broker is there. */
  async start(): Promise<void> {
    checkSocketFolder(this.#deps.dir, 'uid' in this.#deps ? this.#deps.uid : currentUid());
    await this.#replaceStale();
    const server = createServer((socket) => this.#serve(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Security: the folder (0700, checked above) already keeps other users out; the
    // socket's own mode says the same on its own, should the folder ever be widened.
    chmodSync(this.path, 0o600);
    server.on('error', (err) =>
      this.#deps.logger.error('owner socket failed', { error: errorLine(err) }),
    );
    this.#server = server;
    this.#deps.logger.info('owner socket listening', { path: this.path });
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    // close() removes the socket file; connections in flight finish their one answer.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // A pairing would wait for its owner; it ends here (its code stops working).
    for (const socket of this.#pairings) socket.destroy();
    await closed;
  }

  async #replaceStale(): Promise<void> {
    let isSocket: boolean;
    try {
      isSocket = lstatSync(this.path).isSocket();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (!isSocket) {
      throw new OwnerSocketError(
        'not_private',
        `${this.path} exists and is not a socket`,
        'move it away; the broker creates the owner socket there',
      );
    }
    if (await answers(this.path)) {
      throw new OwnerSocketError(
        'in_use',
        `another broker is answering on ${this.path}`,
        'stop that broker first, or give this one its own data_dir',
      );
    }
    // A crashed broker's socket: nobody listens, so it is safe to replace.
    unlinkSync(this.path);
    this.#deps.logger.warn('replaced a stale owner socket left by a broker that did not stop', {
      path: this.path,
    });
  }

  #serve(socket: Socket): void {
    let buffered = '';
    let answered = false;
    socket.setEncoding('utf8');
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', (err) =>
      this.#deps.logger.debug('owner socket client', { error: errorLine(err) }),
    );
    const onData = (chunk: string): void => {
      if (answered) return;
      buffered += chunk;
      const end = buffered.indexOf('\n');
      if (end < 0 && buffered.length <= MAX_REQUEST_BYTES) return;
      answered = true;
      // The line is in: the answer may take long (an undo waits on Nextcloud, a
      // reconciliation pages it), and that is the broker's time, not the client's idle time.
      socket.setTimeout(0);
      const line = end < 0 ? '' : buffered.slice(0, end);
      const request = line.length > MAX_REQUEST_BYTES ? undefined : parseOwnerRequest(line);
      if (request?.op === 'pair') {
        socket.off('data', onData);
        this.#pairings.add(socket);
        socket.once('close', () => this.#pairings.delete(socket));
        void pairOverSocket(socket, buffered.slice(end + 1), request.expect, this.#deps.pairing);
        return;
      }
      void this.#answer(request).then((response) => socket.end(`${JSON.stringify(response)}\n`));
    };
    socket.on('data', onData);
  }

  async #answer(request: OwnerRequest | undefined): Promise<OwnerResponse> {
    if (request === undefined || request.op === 'pair') {
      return {
        ok: false,
        error: 'the owner socket did not understand the request',
        next_step: 'use the `broker` commands of the same version as the running broker',
      };
    }
    try {
      return await this.#handle(request);
    } catch (err) {
      this.#deps.logger.error('owner socket command failed', { error: errorLine(err) });
      return {
        ok: false,
        error: 'the broker hit an internal error',
        next_step: 'see the broker log; run `broker status` to see what stands',
      };
    }
  }

  #grants(): OwnerResponse & { ok: true } {
    const now = this.#deps.now();
    return {
      ok: true,
      text: '',
      grants: this.#deps.store.activeGrants().map((g) => grantJson(g, now, this.#deps.lastUsed)),
    };
  }

  async #handle(request: Exclude<OwnerRequest, { op: 'pair' }>): Promise<OwnerResponse> {
    if (request.op === 'grants') return this.#grants();
    if (request.op === 'pins') return pinsAnswer(this.#deps.pins);
    if (request.op === 'unpin') return unpinAnswer(this.#deps.pins, request.device, SOCKET_ACTOR);
    if (request.op === 'reconcile') return this.#reconcile(request);
    if (request.op === 'requests') {
      const written = (await this.#deps.recordRequests?.(request.instance, request.ids)) ?? false;
      return written
        ? { ok: true, text: '' }
        : {
            ok: false,
            error: `the request ids of instance '${request.instance}' were not recorded`,
            next_step: 'check the instance name and the broker log',
          };
    }
    if (request.op === 'status') {
      const reply = await this.#deps.engine.apply({ kind: 'status' }, SOCKET_ACTOR);
      const now = this.#deps.now();
      const timeout = this.#deps.pendingTimeout;
      const pending = (this.#deps.store.pendingRequests?.() ?? []).filter(
        (r) => now < r.createdAt + timeout,
      );
      return {
        ...this.#grants(),
        text: reply.text,
        pending: pending.map((r) => pendingJson(r, timeout)),
      };
    }
    const parsed = parseCommand(request.text);
    if (parsed === null || !parsed.ok) {
      return {
        ok: false,
        // The shell's words: the problem alone (`broker VERB: …` says which command),
        // and that command's --help, not the console's "help".
        error: parsed === null ? `"${request.text}" is not a command` : parsed.problem,
        next_step:
          parsed?.verb === undefined
            ? 'run `broker --help`'
            : `run \`broker ${parsed.verb} --help\``,
      };
    }
    const answer = await this.#deps.engine.apply(parsed.command, SOCKET_ACTOR);
    this.#show(parsed.command, answer);
    return this.#replied(answer);
  }

  /**
   * A decision made here, shown where the owner watches (the console, or the room); the
   * shell's answer does not wait for the room.
   */
  #show(command: Command, answer: Reply): void {
    const shown = shellDecision(command, answer);
    if (shown === undefined || this.#deps.show === undefined) return;
    this.#deps.show(shown.text, shown.html).catch((err: unknown) => {
      this.#deps.logger.warn('could not show a decision made in the shell', {
        error: errorLine(err),
      });
    });
  }

  async #reconcile(request: OwnerRequest & { op: 'reconcile' }): Promise<OwnerResponse> {
    const reconcile = this.#deps.reconcile;
    if (reconcile === undefined)
      return {
        ok: false,
        error: 'this broker does not reconcile',
        next_step: 'stop it and run `broker reconcile` again: it then reads directly',
      };
    const since = request.since === undefined ? undefined : Date.parse(request.since);
    return { ok: true, text: '', reports: await reconcile(since, request.instance) };
  }

  #replied(reply: Reply): OwnerResponse {
    const now = this.#deps.now();
    const text = [reply.text, ...(reply.continued ?? []).map((part) => part.plain)].join('\n');
    return {
      ok: true,
      text,
      ...(reply.refused === true ? { refused: true } : {}),
      ...(reply.granted === undefined
        ? {}
        : { granted: reply.granted.map((g) => grantJson(g, now)) }),
      ...(reply.revoked === undefined
        ? {}
        : { revoked: reply.revoked.map((g) => grantJson(g, now)) }),
      ...(reply.undo === undefined ? {} : { undo: reply.undo }),
    };
  }
}
