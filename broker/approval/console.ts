/**
 * The console approval gateway (`approval: console`): requests are printed to the
 * terminal and the owner types the same commands as in Matrix (`approve 3`,
 * `approve 3 1,2 2h`, `deny 3`, `deny all`, `show 3`, `revoke all`, `status`, `help`).
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
}

export const CONSOLE_ACTOR = 'console';

export class ConsoleGateway implements ApprovalGateway {
  private readonly deps: ConsoleGatewayDeps;
  private readonly actor: string;
  private readonly prompt: string;
  private rl: Interface | undefined;
  private state: 'new' | 'started' | 'closed' = 'new';
  // Lines are handled one after another so replies print in the order typed.
  private lines: Promise<void> = Promise.resolve();

  constructor(deps: ConsoleGatewayDeps) {
    this.deps = deps;
    this.actor = deps.actor ?? CONSOLE_ACTOR;
    this.prompt = deps.prompt ?? 'broker> ';
  }

  async start(): Promise<void> {
    if (this.state !== 'new') return;
    const rl = createInterface({ input: this.deps.input, terminal: false, crlfDelay: Infinity });
    this.rl = rl;
    this.state = 'started';
    rl.on('line', (line) => {
      this.lines = this.lines.then(() => this.handleLine(line));
    });
    rl.on('close', () => {
      this.state = 'closed';
    });
    // A closed terminal (EPIPE) must not crash the broker; it only ends approvals.
    this.deps.output.on('error', (err) => {
      this.deps.logger?.error('console output failed', { error: err.message });
      this.rl?.close();
    });
    this.write('Approval console: requests appear here; type "help" for the commands.\n');
    this.write(this.prompt);
  }

  async stop(): Promise<void> {
    this.rl?.close();
    this.state = 'closed';
    await this.lines;
  }

  /** True while the input is open: nobody can approve once it has ended. */
  healthy(): boolean {
    return this.state === 'started';
  }

  /** Resolves once every line read so far has been answered (for tests and shutdown). */
  idle(): Promise<void> {
    return this.lines;
  }

  async postRequest(request: RequestRecord): Promise<void> {
    this.ensureAvailable();
    const { pending_timeout, default_grant, max_grant } = this.deps.lifecycle;
    const rendered = renderRequest(request, {
      expiresIn: request.createdAt + pending_timeout - this.deps.now(),
      defaultGrant: default_grant,
      maxGrant: max_grant,
      // No reactions on a terminal: show only the commands to type.
      reactions: false,
    });
    this.write(`\n${rendered.plain}\n${this.prompt}`);
  }

  async announce(text: string): Promise<void> {
    this.ensureAvailable();
    // Security: announcements should come from format.ts already escaped; a control
    // character that slipped through still must not reach the terminal.
    const safe = escapeMatching(text, CONTROL_EXCEPT_LF);
    this.write(`\n${safe}\n${this.prompt}`);
  }

  private ensureAvailable(): void {
    if (this.state === 'new') {
      throw new ApprovalUnavailableError('not_started', 'console approval not started');
    }
    if (this.state === 'closed') {
      throw new ApprovalUnavailableError('stopped', 'console input has ended; nobody can approve');
    }
  }

  private async handleLine(line: string): Promise<void> {
    if (line.trim() === '') {
      this.write(this.prompt);
      return;
    }
    // Everything typed here is meant for the broker, so chatter gets a hint too.
    const answer = await this.deps.engine.handleText(line, this.actor);
    // A terminal has no size limit: the parts of a long answer are printed together.
    const text =
      answer === null
        ? 'Not a command. Type "help" for the commands.'
        : [answer.text, ...(answer.continued ?? []).map((part) => part.plain)].join('\n');
    this.write(`${text}\n${this.prompt}`);
  }

  private write(text: string): void {
    try {
      this.deps.output.write(text);
    } catch (err) {
      this.deps.logger?.error('console output failed', {
        error: err instanceof Error ? err.message : 'unknown error',
      });
    }
  }
}
