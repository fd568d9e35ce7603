/**
 * The approval engine: the approver's commands and reactions in, decisions on the grant
 * store out. Transport-independent: the Matrix and console gateways check who is
 * speaking and pass `actor`; this module never sees a chat event.
 *
 * It parses typed commands and allow-listed reactions, runs each decision
 * (decisions.ts: approve, deny, deny all; revocations.ts: revoke; each audited and
 * answered; views.ts: status and show, read-only) one at a
 * time, so audit lines follow the order of the state changes, and remembers which 👍
 * made which approval (reaction-links.ts), so withdrawing it undoes the approval.
 */
import type { Clock, GrantRecord } from '../base/domain.js';
import { errorLine } from '../base/errors.js';
import { silentLogger, type Logger } from '../base/log.js';
import { escapeHtml } from '../base/text.js';
import { Decisions } from './decisions.js';
import { reactionCommand } from './emoji.js';
import type { Command } from './command.js';
import { helpText } from './help.js';
import { parseCommand } from './parser.js';
import type { GrantDatabase } from '../grants/index.js';
import type { ApprovalAudit, ApprovalStore, LifecyclePolicy, ReactionRef } from './ports.js';
import { MemoryReactionLinks, ReactionLinks, type ReactionLinkStore } from './reaction-links.js';
import { reply, say, type Reply } from './reply.js';
import { Revocations } from './revocations.js';
import { Views } from './views.js';
import { renderUndo } from './undo-message.js';
import type { UndoAnswer, UndoCommand } from '../operations/undo/service.js';

type PolicyDeps =
  | { config: { lifecycle: LifecyclePolicy; instances: ReadonlyMap<string, unknown> } }
  | { lifecycle: LifecyclePolicy; instances: ReadonlySet<string> | ReadonlyMap<string, unknown> };

export type ApprovalEngineDeps = PolicyDeps & {
  store: ApprovalStore;
  audit: ApprovalAudit;
  now: Clock;
  /** Called with grants that just ended (unlock files, abort transfers). Errors are logged. */
  onRevoked?: (grants: GrantRecord[]) => Promise<void>;
  logger?: Logger;
  /** Where approving reactions are remembered; default the store's database, else memory. */
  reactions?: ReactionLinkStore;
  /**
   * The channel the owner answers in: `matrix` (default) offers reactions, `console`
   * does not, and `help` says only what works there.
   */
  channel?: 'matrix' | 'console';
  /** The Matrix room is encrypted: `help` offers the poll and pairing, not reactions. */
  encrypted?: boolean;
  /**
   * Wraps each owner command (the audit anchor's `batch`: one post of the head per
   * command, however many records it wrote). Default: runs it as is.
   */
  batch?: <T>(command: () => Promise<T>) => Promise<T>;
  /** A line `status` ends with (the clear-text room warning, views.ts). */
  statusNotice?: string;
  /** Takes back what operations changed (operations/undo/); without it `undo` is refused. */
  undo?: (command: UndoCommand) => Promise<UndoAnswer>;
};

/** Said when `undo` is typed in a clear-text room. */
export const UNDO_NEEDS_ENCRYPTION =
  "Undo is taken only from a pinned device in an encrypted room (matrix.encryption: required), or on the broker's host (broker undo); in this clear-text room the homeserver could make it up. Nothing was changed.";

export class ApprovalEngine {
  /**
   * The grant database's identity (undefined when the store has none). Request numbers
   * restart at 1 in a new database, so a gateway that finds a request number in an old
   * message must also find this id there before acting on it.
   */
  readonly storeId: string | undefined;
  /**
   * The grant database, when the store has one: the Matrix gateway keeps its own tables
   * there (the poll nonces and the counted messages of an encrypted room).
   */
  readonly database: GrantDatabase | undefined;
  readonly #decisions: Decisions;
  readonly #revocations: Revocations;
  readonly #views: Views;
  readonly #help: string[];
  readonly #logger: Logger;
  readonly #reactions: ReactionLinkStore;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #batch: <T>(command: () => Promise<T>) => Promise<T>;
  readonly #undo: ApprovalEngineDeps['undo'];
  /** A Matrix room without encryption: its decisions are only the homeserver's word. */
  readonly #clearTextRoom: boolean;

  constructor(deps: ApprovalEngineDeps) {
    this.#undo = deps.undo;
    this.#clearTextRoom = (deps.channel ?? 'matrix') === 'matrix' && deps.encrypted !== true;
    this.storeId = deps.store.storeId;
    this.database = deps.store.database;
    this.#logger = deps.logger ?? silentLogger;
    this.#batch = deps.batch ?? ((command) => command());
    this.#reactions =
      deps.reactions ??
      (deps.store.database === undefined
        ? new MemoryReactionLinks()
        : new ReactionLinks(deps.store.database));
    const policy =
      'config' in deps
        ? { lifecycle: deps.config.lifecycle, instances: deps.config.instances }
        : { lifecycle: deps.lifecycle, instances: deps.instances };
    this.#decisions = new Decisions({
      store: deps.store,
      audit: deps.audit,
      now: deps.now,
      lifecycle: policy.lifecycle,
      onRevoked: deps.onRevoked,
      logger: this.#logger,
    });
    this.#revocations = new Revocations({
      store: deps.store,
      instances: policy.instances,
      decisions: this.#decisions,
    });
    this.#views = new Views({
      store: deps.store,
      now: deps.now,
      lifecycle: policy.lifecycle,
      ...(deps.statusNotice === undefined ? {} : { notice: deps.statusNotice }),
    });
    // One line each, so Matrix's HTML body breaks where the plain text does.
    this.#help = helpText({
      reactions: (deps.channel ?? 'matrix') === 'matrix',
      encrypted: deps.encrypted === true,
      lifecycle: policy.lifecycle,
    }).split('\n');
  }

  /** Parses and applies one typed message. `null`: chatter, not for the broker. */
  async handleText(text: string, actor: string): Promise<Reply | null> {
    const parsed = parseCommand(text);
    if (parsed === null) return null;
    // The reason may quote what was typed; shown escaped like any other outside text.
    if (!parsed.ok) return reply([[{ text: parsed.reason }]]);
    // Security: undo changes the owner's files; in a clear-text room anyone who controls
    // the homeserver can type as the owner, so it is taken only where a decision is the
    // owner's own (a pinned device's encrypted message, the console, the owner socket).
    if (parsed.command.kind === 'undo' && this.#clearTextRoom)
      return { ...say(UNDO_NEEDS_ENCRYPTION), refused: true };
    return this.apply(parsed.command, actor);
  }

  /**
   * Applies an allow-listed reaction on request `requestId`'s message; else `null`.
   * With `reaction` (the event), a 👍 that granted something is remembered, so that
   * withdrawing it later undoes that approval (`undoApprovalReaction`).
   */
  async handleReaction(
    key: string,
    requestId: number,
    actor: string,
    reaction?: ReactionRef,
  ): Promise<Reply | null> {
    const command = reactionCommand(key, requestId);
    if (command === null) return null;
    return this.#serially(async () => {
      const answer = await this.#applyNow(command, actor);
      if (reaction === undefined || command.kind !== 'approve') return answer;
      if ((answer.granted?.length ?? 0) === 0) return answer;
      return this.#linkReaction(answer, reaction, requestId, actor);
    });
  }

  /**
   * Applies one command on behalf of `actor` (already verified by the gateway). An undo
   * does not wait in line with the decisions, nor hold their anchor posts (it may take a
   * while on Nextcloud, and decides nothing about grants): undo runs one at a time by
   * itself, and its lines are anchored by the interval like an operation's.
   */
  apply(command: Command, actor: string): Promise<Reply> {
    if (command.kind === 'undo') return this.#applyNow(command, actor);
    return this.#serially(() => this.#applyNow(command, actor));
  }

  /**
   * The approver withdrew their 👍: end what request `requestId` granted. For callers
   * that track the reaction themselves; `undoApprovalReaction` looks it up.
   */
  undoApproval(requestId: number, actor: string): Promise<Reply> {
    return this.#serially(() =>
      this.#guarded('undo', () =>
        this.#revocations.revoke({ request: requestId }, actor, 'approval_withdrawn'),
      ),
    );
  }

  /**
   * The approver withdrew the reaction `reaction`: when it is the 👍 that approved a
   * request, end what that request granted and say so; `null` when it approved nothing
   * (another reaction, a message, or an approval already withdrawn).
   */
  undoApprovalReaction(reaction: ReactionRef, actor: string): Promise<Reply | null> {
    return this.#serially(async () => {
      let requestId: number | undefined;
      try {
        requestId = this.#takeReaction(reaction, actor);
      } catch (err) {
        this.#logger.error('looking up a withdrawn reaction failed', { error: errorLine(err) });
        return say(
          'The broker could not tell whether the removed reaction approved a request; nothing was revoked.',
          'Use "revoke N" to withdraw an approval.',
        );
      }
      if (requestId === undefined) return null;
      const id = requestId;
      return this.#guarded('undo', () =>
        this.#revocations.revoke({ request: id }, actor, 'approval_withdrawn'),
      );
    });
  }

  #linkReaction(answer: Reply, reaction: ReactionRef, requestId: number, actor: string): Reply {
    const link = { ...reaction, requestId, approver: actor };
    try {
      this.#reactions.record(link);
      return answer;
    } catch (err) {
      // The approval stands (it is recorded and audited); only the shortcut is lost.
      this.#logger.error('could not record which reaction approved the request', {
        request: requestId,
        error: errorLine(err),
      });
      const extra = `(Removing the 👍 will not undo this; use "revoke ${requestId}".)`;
      return {
        ...answer,
        text: `${answer.text}\n${extra}`,
        html: `${answer.html}<br>${escapeHtml(extra)}`,
      };
    }
  }

  #takeReaction(reaction: ReactionRef, actor: string): number | undefined {
    return this.#reactions.take(reaction.eventId, { roomId: reaction.roomId, approver: actor });
  }

  #serially<T>(task: () => Promise<T>): Promise<T> {
    const batched = (): Promise<T> => this.#batch(task);
    const run = this.#queue.then(batched, batched);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #guarded(what: string, task: () => Promise<Reply>): Promise<Reply> {
    try {
      return await task();
    } catch (err) {
      this.#logger.error('approval command failed', { command: what, error: errorLine(err) });
      return say(
        'The broker hit an internal error; the command may not have been applied.',
        'Send "status" to see the current grants.',
      );
    }
  }

  #applyNow(command: Command, actor: string): Promise<Reply> {
    return this.#guarded(command.kind, async () => {
      switch (command.kind) {
        case 'approve':
          return this.#decisions.approve(command, actor);
        case 'deny':
          return this.#decisions.deny(command.request, actor);
        case 'deny_all':
          return this.#decisions.denyAll(actor);
        case 'revoke':
          return this.#revocations.revoke(command.target, actor, 'command');
        case 'show':
          return this.#views.show(command.request);
        case 'status':
          return this.#views.status();
        case 'help':
          return say(...this.#help);
        case 'undo':
          return this.#undoNow(command, actor);
      }
    });
  }

  async #undoNow(command: Extract<Command, { kind: 'undo' }>, actor: string): Promise<Reply> {
    if (this.#undo === undefined)
      return { ...say('Undo is not available in this broker.'), refused: true };
    const answer = await this.#undo({ target: command.target, dryRun: command.dryRun, actor });
    return renderUndo(answer);
  }
}
