/**
 * `undo`: the owner takes back what an agent's operations changed, from Nextcloud's own
 * versions and trash bin (docs/contracts.md §6; files.ts and others.ts say how each kind
 * is taken back, scan.ts which operations a target names).
 *
 * One undo runs at a time: a second waits, then reads the log again, and finds what the
 * first took back already done (`already`). Each operation gets its own audited lines
 * (`undo`, §4): an intent line written and fsynced before anything is sent (none
 * written: nothing more is sent, for this operation or the rest), then an outcome line
 * with what came of it and Nextcloud's answers to undo's own requests, collected by the
 * pipeline's recording as an operation's are. A decision made without a request (done
 * already, changed nothing, recorded before undo existed) has its outcome line only.
 *
 * Security: undo passes no wall. It is the owner's act (the owner socket, the console,
 * or a pinned device in the encrypted room), it acts only where an audited operation
 * acted (the paths its own lines name, which the wall checked), and only to put back
 * what was there; it never destroys (files.ts). It reads only a log that verifies.
 */
import type { AuditRecord } from '../../audit/record.js';
import type { HistoryRead } from '../../audit/history.js';
import { errorDetail } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { AuditTrail } from '../audit-trail.js';
import { OutcomeAnswers } from '../outcome-answers.js';
import { trashRecord } from '../files.js';
import type { GrantsPort, NextcloudPort } from '../ports.js';
import type { Allowed, Pipeline } from '../pipeline.js';
import type { SpaceGuard } from '../space-guard.js';
import {
  undoCreatedFile,
  undoCreatedFolder,
  undoMove,
  undoReplaced,
  undoTrash,
  type TrashFor,
} from './files.js';
import { undoEvent, undoLock, type LockRelease } from './others.js';
import {
  base,
  decidedWithout,
  dependsOn,
  exitOf,
  failed,
  usage,
  type UndoAnswer,
  type UndoCommand,
  type UndoItem,
} from './items.js';
import { UndoScan, type RecordedOperation } from './scan.js';
import { notUndoable, type Undoing } from './undoing.js';

export type { UndoTarget } from './scan.js';
export type { UndoAnswer, UndoCommand, UndoExit, UndoItem } from './items.js';

export interface UndoDeps {
  readonly pipeline: Pipeline;
  readonly trail: AuditTrail;
  readonly space: SpaceGuard;
  readonly locks: LockRelease;
  readonly grants: Pick<GrantsPort, 'grant' | 'getRequest' | 'activeGrants'>;
  /** Reads the audit log, each intact record to `onRecord` (audit/history.ts). */
  readonly history: (onRecord: (record: AuditRecord) => void) => Promise<HistoryRead>;
  /** The configured instances. */
  readonly instances: { has(name: string): boolean };
  readonly correlationId: () => string;
  readonly logger: Logger;
}

/** The owner acts without a grant: the space guard still weighs undo's trash (expiry). */
function ownerAllowed(instance: string, path: string): Allowed {
  return {
    instance,
    paths: [path],
    grantIds: [],
    discovery: false,
    expiresAt: undefined,
    signal: new AbortController().signal,
    recheck: () => undefined,
  };
}

export class UndoService {
  readonly #deps: UndoDeps;
  /** One undo at a time (see the top of this file). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: UndoDeps) {
    this.#deps = deps;
  }

  undo(command: UndoCommand): Promise<UndoAnswer> {
    const run = this.#queue.then(() => this.#undo(command));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #undo(command: UndoCommand): Promise<UndoAnswer> {
    const { target } = command;
    const { grants } = this.#deps;
    if ('request' in target && grants.getRequest(target.request) === undefined)
      return usage(`there is no request ${target.request}`, 'run `broker status` for the requests');
    // Each intent names its grants: asked of the store once per grant, however long the log.
    const requests = new Map<number, number | undefined>();
    const requestOf = (grant: number): number | undefined => {
      if (!requests.has(grant)) requests.set(grant, grants.grant(grant)?.requestId);
      return requests.get(grant);
    };
    const scan = new UndoScan(target, requestOf);
    const read = await this.#deps.history((record) => scan.add(record));
    if (!read.ok)
      return {
        ok: false,
        code: 'audit',
        message: `the audit log does not verify at seq ${read.seq} (${read.reason}): undo acts only on an intact record of what happened`,
        nextStep: 'run `broker audit verify` and see the runbook, "The audit log does not verify"',
      };
    const found = scan.result();
    if (!found.ok) {
      const seq = 'seq' in target ? target.seq : 0;
      return found.problem === 'no_such_seq'
        ? usage(`the audit log has no record ${seq}`, 'run `broker audit tail` for the seqs')
        : usage(
            `record ${seq} is a ${found.event ?? 'record'} line, not an operation's (or its operation never finished)`,
            "give the seq of an operation's intent or outcome line (`broker audit tail`)",
          );
    }
    const items: UndoItem[] = [];
    let audited = true;
    for (const op of found.operations) {
      const after = command.dryRun ? dependsOn(op, items) : undefined;
      const item = !audited
        ? {
            ...base(op),
            result: 'failed' as const,
            code: 'audit_unavailable',
            reason: 'not tried: the audit log could not record an earlier one',
          }
        : await this.#one(
            op,
            command,
            after === undefined
              ? undefined
              : {
                  result: 'would_undo',
                  reason: `would be checked and taken back after #${after.seq}, which acts on the same place (a dry run cannot see what that will leave)`,
                },
          );
      if (item.code === 'audit_unavailable') audited = false;
      items.push(item);
    }
    const warnings =
      'request' in target && grants.activeGrants().some((g) => g.requestId === target.request)
        ? [
            `request ${target.request} still has grants in force: the agent can change these files again; revoke it first (broker revoke ${target.request})`,
          ]
        : [];
    return { ok: true, target, dryRun: command.dryRun, items, warnings, exit: exitOf(items) };
  }

  /** One operation: its lines, and what undo did (`decided`: without asking Nextcloud). */
  async #one(op: RecordedOperation, command: UndoCommand, decided?: Undoing): Promise<UndoItem> {
    const { trail, logger } = this.#deps;
    const where = base(op);
    const { seq: undoes, ...at } = where;
    const lines = {
      event: 'undo' as const,
      undoes,
      actor: command.actor,
      correlation_id: this.#deps.correlationId(),
      ...at,
      ...('request' in command.target ? { request: command.target.request } : {}),
      ...(command.dryRun ? { dry_run: true as const } : {}),
    };
    const known = decidedWithout(op, this.#deps.instances) ?? decided;
    if (known !== undefined) {
      await trail.bestEffort({ ...lines, stage: 'outcome', ...known });
      return { ...where, ...known };
    }
    try {
      await trail.append({ ...lines, stage: 'intent' });
    } catch (error) {
      logger.error('audit of an undo failed; nothing sent', { error: errorDetail(error) });
      return {
        ...where,
        result: 'failed',
        code: 'audit_unavailable',
        reason: 'the audit log could not record the undo, so nothing was sent',
      };
    }
    const answers = new OutcomeAnswers();
    const undoing = await this.#deps.pipeline
      .owner(op.instance, answers, (client) => this.#run(client, op, command.dryRun))
      .catch((error: unknown) => failed(error, logger));
    await trail.bestEffort({ ...lines, stage: 'outcome', ...undoing, ...answers.fields() });
    return { ...where, ...undoing };
  }

  #run(client: NextcloudPort, op: RecordedOperation, dryRun: boolean): Promise<Undoing> {
    const change = op.change;
    const trash = this.#trashFor(op.instance);
    switch (change.kind) {
      case 'upload':
        return change.effect.kind === 'replaced'
          ? undoReplaced(client, op, change.effect, dryRun)
          : undoCreatedFile(client, op, change.effect, dryRun, trash);
      case 'folder':
        return undoCreatedFolder(client, op, change.effect, dryRun, trash);
      case 'move':
        return undoMove(client, op, change.effect, dryRun);
      case 'trash':
        return undoTrash(client, change.trash, dryRun);
      case 'event':
        return undoEvent(client, op, change.effect, dryRun);
      case 'lock':
        return undoLock(this.#deps.locks, change.effect, dryRun);
      default:
        // decidedWithout answered these.
        return Promise.resolve(notUndoable('nothing to take back'));
    }
  }

  /** Undo's trash: weighed by the space guard as the agent's is, then the unique-name trash. */
  #trashFor(instance: string): TrashFor {
    return async (client, path) => {
      // Security: a trash that fills the trash bin past Nextcloud's limit makes its expiry
      // delete the oldest trash items (the owner's): undo's own trash is weighed too.
      const held = await this.#deps.space.reserve(client, ownerAllowed(instance, path), {
        kind: 'trash',
        path,
      });
      let outcome;
      try {
        outcome = await client.trash(path);
      } finally {
        held.settle();
      }
      const trash = trashRecord(outcome);
      if (outcome.state === 'trashed')
        return {
          result: 'undone',
          reason: `moved "${path}" to the trash bin (as "${outcome.renamed}")`,
          trash,
        };
      return {
        result: 'failed',
        code: outcome.cause.code,
        reason: `${outcome.cause.message}; it was not trashed (${outcome.state === 'renamed_back' ? `"${path}" is where it was` : `it may be at "${outcome.renamed}"`})`,
        trash,
      };
    };
  }
}
