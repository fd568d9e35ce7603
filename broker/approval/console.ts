/**
 * The console approval gateway (`approval: console`): requests are printed to the
 * terminal and the owner types the same commands as in Matrix (`approve 3`,
 * `approve 3 1,2 2h`, `deny 3`, `deny all`, `show 3`, `revoke all`, `status`, `help`).
 *
 * The console is not the only channel: with the owner socket (`ownerSocket`), the same
 * commands also come from any shell of the broker's user (`broker approve N`). So a
 * console whose input is not a terminal (a process manager, `npm start < /dev/null`)
 * runs headless: it reads what stdin brings, and when stdin ends it says that approvals
 * continue over the owner socket and stays healthy. On a terminal, Ctrl-D (end of
 * input) and `quit` stop the broker cleanly (`onQuit`).
 *
 * Log lines share the terminal: `aroundLog` clears the `broker>` prompt before one and
 * draws it again after, so a log line never lands on the prompt line. Headless there is
 * no prompt at all.
 *
 * Security: whoever can type on the broker's stdin is the approver (actor `console`);
 * use it only where the terminal is the owner's. Agent text reaches the terminal only
 * through format.ts, which escapes control characters, so a path or reason cannot
 * carry terminal escape sequences.
 */
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Clock, RequestRecord } from '../base/domain.js';
import type { Logger } from '../base/log.js';
import type { ApprovalEngine } from './engine.js';
import { CONTROL_EXCEPT_LF, escapeMatching } from '../base/text.js';
import { renderRequest } from './request-message.js';
import { ApprovalUnavailableError, type ApprovalGateway } from './gateway.js';

export interface ConsoleGatewayDeps {
  input: Readable;
  output: Writable;
  engine: ApprovalEngine;
  now: Clock;
  lifecycle: { pending_timeout: number; default_grant: number; max_grant: number };
  /** Recorded as the decider in the store and the audit log. Default `console`. */
  actor?: string;
  logger?: Logger;
  prompt?: string;
  /** stdin and stdout are a terminal (default true). */
  interactive?: boolean;
  /** The owner socket's path, when it runs: approvals do not depend on stdin alone. */
  ownerSocket?: string;
  /** Asked to stop the broker: `quit`, or Ctrl-D on a terminal. */
  onQuit?: (why: string) => void;
}

/** What `quit` may be typed as. */
const QUIT = /^\s*(quit|exit)\s*$/i;

export const CONSOLE_ACTOR = 'console';

export class ConsoleGateway implements ApprovalGateway {
  readonly #deps: ConsoleGatewayDeps;
  readonly #actor: string;
  readonly #prompt: string;
  #rl: Interface | undefined;
  #state: 'new' | 'started' | 'headless' | 'closed' = 'new';
  /** The prompt is the last thing written (nothing typed after it was read yet). */
  #atPrompt = false;
  // Lines are handled one after another so replies print in the order typed.
  #lines: Promise<void> = Promise.resolve();

  constructor(deps: ConsoleGatewayDeps) {
    this.#deps = deps;
    this.#actor = deps.actor ?? CONSOLE_ACTOR;
    this.#prompt = deps.prompt ?? 'broker> ';
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') return;
    const rl = createInterface({ input: this.#deps.input, terminal: false, crlfDelay: Infinity });
    this.#rl = rl;
    this.#state = 'started';
    rl.on('line', (line) => {
      this.#atPrompt = false;
      this.#lines = this.#lines.then(() => this.#handleLine(line));
    });
    rl.on('close', () => this.#inputEnded());
    // A closed terminal (EPIPE) must not crash the broker; it only ends approvals.
    this.#deps.output.on('error', (err) => {
      this.#deps.logger?.error('console output failed', { error: err.message });
      this.#rl?.close();
    });
    this.#write(`${this.#greeting()}\n`);
    this.#writePrompt();
  }

  #interactive(): boolean {
    return this.#deps.interactive ?? true;
  }

  #greeting(): string {
    const first = 'Approval console: requests appear here; type "help" for the commands.';
    const socket = this.#deps.ownerSocket;
    if (socket === undefined) return first;
    if (this.#interactive()) {
      return `${first}\nFrom another shell: broker approve N, broker deny N, broker grants (owner socket ${socket}).`;
    }
    return `${first}\nstdin is not a terminal: approve from a shell of this user with broker approve N, broker deny N, broker grants (owner socket ${socket}).`;
  }

  #inputEnded(): void {
    if (this.#state !== 'started') return;
    if (this.#interactive() && this.#deps.onQuit !== undefined) {
      this.#state = 'closed';
      this.#deps.onQuit('end of console input');
      return;
    }
    if (this.#deps.ownerSocket === undefined) {
      this.#state = 'closed';
      return;
    }
    this.#state = 'headless';
    this.#write(
      `\nConsole input ended: approvals continue over the owner socket (${this.#deps.ownerSocket}): run broker approve N or broker deny N in a shell of this user.\n`,
    );
  }

  /**
   * Runs `writeLog` (which writes one log line to the same terminal) so that the line
   * does not land after the prompt: the prompt line is cleared first and drawn again
   * after. Outside a terminal there is no prompt, so the line is written as it is.
   */
  aroundLog(writeLog: () => void): void {
    if (!this.#atPrompt || this.#state !== 'started') {
      writeLog();
      return;
    }
    this.#write('\r\u001b[2K');
    writeLog();
    this.#write(this.#prompt);
  }

  async stop(): Promise<void> {
    this.#rl?.close();
    this.#state = 'closed';
    await this.#lines;
  }

  /**
   * True while someone can approve: the input is open, or it ended and the owner
   * socket carries the approvals (headless).
   */
  healthy(): boolean {
    return this.#state === 'started' || this.#state === 'headless';
  }

  /** Resolves once every line read so far has been answered (for tests and shutdown). */
  idle(): Promise<void> {
    return this.#lines;
  }

  async postRequest(request: RequestRecord): Promise<void> {
    this.#ensureAvailable();
    const { pending_timeout, default_grant, max_grant } = this.#deps.lifecycle;
    const rendered = renderRequest(request, {
      expiresIn: request.createdAt + pending_timeout - this.#deps.now(),
      defaultGrant: default_grant,
      maxGrant: max_grant,
      // No reactions on a terminal: show only the commands to type.
      reactions: false,
    });
    const how =
      this.#state === 'headless' || !this.#interactive()
        ? `\n(From a shell of this user: broker approve ${request.id} or broker deny ${request.id}.)`
        : '';
    this.#write(`\n${rendered.plain}${how}\n`);
    this.#writePrompt();
  }

  async announce(text: string): Promise<void> {
    this.#ensureAvailable();
    // Security: announcements should come from format.ts already escaped; a control
    // character that slipped through still must not reach the terminal.
    const safe = escapeMatching(text, CONTROL_EXCEPT_LF);
    this.#write(`\n${safe}\n`);
    this.#writePrompt();
  }

  /** The prompt, on a terminal only: headless, nobody reads it and it ends up in logs. */
  #writePrompt(): void {
    if (this.#state !== 'started' || !this.#interactive()) return;
    this.#write(this.#prompt);
    this.#atPrompt = true;
  }

  #ensureAvailable(): void {
    if (this.#state === 'new') {
      throw new ApprovalUnavailableError('not_started', 'console approval not started');
    }
    if (this.#state === 'closed') {
      throw new ApprovalUnavailableError('stopped', 'console input has ended; nobody can approve');
    }
  }

  async #handleLine(line: string): Promise<void> {
    if (line.trim() === '') {
      this.#writePrompt();
      return;
    }
    if (QUIT.test(line) && this.#deps.onQuit !== undefined) {
      this.#write('Stopping the broker.\n');
      this.#deps.onQuit('quit typed on the console');
      return;
    }
    // Everything typed here is meant for the broker, so chatter gets a hint too.
    const answer = await this.#deps.engine.handleText(line, this.#actor);
    // A terminal has no size limit: the parts of a long answer are printed together.
    const text =
      answer === null
        ? 'Not a command. Type "help" for the commands.'
        : [answer.text, ...(answer.continued ?? []).map((part) => part.plain)].join('\n');
    this.#write(`${text}\n`);
    this.#writePrompt();
  }

  #write(text: string): void {
    try {
      this.#deps.output.write(text);
    } catch (err) {
      this.#deps.logger?.error('console output failed', {
        error: err instanceof Error ? err.message : 'unknown error',
      });
    }
  }
}
