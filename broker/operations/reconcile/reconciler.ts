/**
 * Reconciliation: Nextcloud's record of what the broker's account did, compared with the
 * audit log (docs/contracts.md "broker reconcile", SECURITY.md "The outer wall"). One
 * pass per account:
 *
 * 1. read the account's own changes from Nextcloud's Activity app, one row each
 *    (activity-rows.ts), from the cursor (or, asked `since` a time, back to it), inside
 *    one recording scope: the pass's own request ids go into its `reconcile` line;
 * 2. then read the audit log (an operation's intent is durable before its first request,
 *    so every change read in 1 has its operation in the log by now);
 * 3. match (match.ts); write the `reconcile` line; move the cursor; tell the owner of
 *    what is unexplained, and count it (a look back `since` a time only answers: what it
 *    finds is told and counted once, by the pass whose cursor passes it).
 *
 * A pass that read nothing new (the daemon's, on its interval) writes no line: its one
 * request id goes to the stray answers (lazily batched), so an idle broker does not grow
 * its log. Passes of one account run one at a time; a Nextcloud without the Activity
 * app makes the account `off`, never a failure of the daemon.
 */
import type { Clock } from '../../base/domain.js';
import { errorDetail } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import { escapeForReason } from '../../base/text.js';
import { iso } from '../../base/time.js';
import type { AuditEvent } from '../../audit/events.js';
import { lineStart, readRecords } from '../../audit/records.js';
import type { NextcloudAnswer } from '../../nextcloud/client.js';
import { newest, readBack, readOn, type Read } from './reads.js';
import { isNextcloudError } from '../nextcloud-errors.js';
import type { NextcloudPort } from '../ports.js';
import type { Timers } from '../timers.js';
import { answerFields } from '../outcome-answers.js';
import { AuditFactsBuilder, resumeOffset, type AuditedOperation } from './audited.js';
import { changeOf } from './changes.js';
import type { Cursor, CursorFile } from './cursor.js';
import { matchChanges } from './match.js';
import {
  notCompared,
  unexplainedOf,
  type ReconcileAccount,
  type ReconcileReport,
} from './report.js';

/** Unexplained changes listed in one `reconcile` line (all are counted). */
export const LISTED_CHANGES = 100;
/** Unexplained changes named in the log line of a pass that finds some. */
const LOGGED_CHANGES = 5;
/** How long after an operation ended a change may still be matched to it (late rows). */
const HORIZON_MS = 3_600_000;
/** Nextcloud's whole seconds and the request's own time, before the clocks' difference. */
const BASE_TOLERANCE_MS = 2_000;

export type ReconcileTrigger = 'interval' | 'command';

export interface ReconcilerDeps {
  readonly accounts: readonly ReconcileAccount[];
  readonly clients: ReadonlyMap<
    string,
    Pick<NextcloudPort, 'activity' | 'activityRows' | 'recording'>
  >;
  /** The audit log file (read, never written, here). */
  readonly logFile: string;
  readonly cursors: CursorFile;
  /** Appends a line; false when it could not be written. */
  readonly write: (event: AuditEvent) => Promise<boolean>;
  /** Where a quiet pass's request ids go (stray-answers.ts, lazily). */
  readonly quiet?: (instance: string, answer: NextcloudAnswer) => void;
  /** Tells the owner of unexplained changes (room or console). */
  readonly tell?: (report: ReconcileReport) => Promise<void>;
  /** Counts unexplained changes (`broker_reconcile_unexplained_total`). */
  readonly counted?: (instance: string, count: number) => void;
  readonly now: Clock;
  readonly logger: Logger;
}

export interface PassOptions {
  readonly trigger: ReconcileTrigger;
  /** Compare from this time (ms) back, not from the cursor; the cursor does not move. */
  readonly since?: number;
}

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #running = new Map<string, Promise<unknown>>();
  #cursors: Map<string, Cursor> | undefined;
  #timer: { timers: Pick<Timers, 'clearInterval'>; handle: unknown } | undefined;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /**
   * A pass of every account now (the first one sets each cursor), then every
   * `intervalMs`. A pass that fails is logged; the next one tries again.
   */
  start(intervalMs: number, timers: Pick<Timers, 'setInterval' | 'clearInterval'>): void {
    if (this.#timer !== undefined) return;
    const tick = (): void => {
      this.passAll({ trigger: 'interval' }).catch((error: unknown) =>
        this.#deps.logger.error('reconciliation failed', { error: errorDetail(error) }),
      );
    };
    tick();
    this.#timer = { timers, handle: timers.setInterval(tick, intervalMs) };
  }

  /** Stops the interval and waits for the passes in progress. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) this.#timer.timers.clearInterval(this.#timer.handle);
    this.#timer = undefined;
    await Promise.all(this.#running.values());
  }

  get accounts(): readonly ReconcileAccount[] {
    return this.#deps.accounts;
  }

  /** One pass of every account (or of the one holding `instance`), one after another. */
  async passAll(options: PassOptions, instance?: string): Promise<ReconcileReport[]> {
    const reports: ReconcileReport[] = [];
    for (const account of this.#deps.accounts)
      if (instance === undefined || account.instances.includes(instance))
        reports.push(await this.pass(account, options));
    return reports;
  }

  /** One pass of one account, after any of its passes in progress. */
  pass(account: ReconcileAccount, options: PassOptions): Promise<ReconcileReport> {
    const before = this.#running.get(account.key) ?? Promise.resolve();
    const run = before.then(() => this.#pass(account, options));
    this.#running.set(
      account.key,
      run.catch(() => undefined),
    );
    return run;
  }

  async #pass(account: ReconcileAccount, options: PassOptions): Promise<ReconcileReport> {
    const client = this.#deps.clients.get(account.name);
    if (client === undefined) throw new Error(`no client for instance ${account.name}`);
    const cursor = options.since === undefined ? this.#cursor(account) : undefined;
    const answers: NextcloudAnswer[] = [];
    let read: Read;
    try {
      read = await client.recording(
        (a) => answers.push(a),
        () =>
          options.since !== undefined
            ? readBack(client, options.since)
            : cursor === undefined
              ? newest(client)
              : readOn(client, cursor.activity),
      );
    } catch (error) {
      return this.#failed(account, options, answers, error);
    }
    const now = this.#deps.now();
    if (cursor === undefined && options.since === undefined) {
      // The first pass: from now on (what came before is not the broker's to explain).
      await this.#record(account, options, answers, { rows: 0, unexplained: [], started: true });
      this.#save(account, {
        activity: read.lastRead ?? null,
        time: now,
        auditOffset: 0,
        used: new Map(),
      });
      return {
        ...this.#base(account),
        status: 'started',
        from: iso(now),
        rows: 0,
        explained: 0,
        unexplained: [],
      };
    }
    const facts = new AuditFactsBuilder(Number.POSITIVE_INFINITY);
    const from = cursor === undefined ? 0 : await lineStart(this.#deps.logFile, cursor.auditOffset);
    const end = await readRecords(this.#deps.logFile, from, (r, at) => facts.add(r, at));
    const skew = read.serverTime === undefined ? 0 : Math.abs(read.serverTime - now);
    const toleranceMs = BASE_TOLERANCE_MS + skew;
    const changes = read.rows.filter((r) => r.user === account.user).map(changeOf);
    const operations = facts
      .facts()
      .operations.filter((op) => account.instances.includes(op.instance));
    const used = cursor?.used ?? new Map<string, number>();
    const matching = matchChanges(changes, operations, { toleranceMs, now, used });
    const unexplained = matching.unexplained.map(unexplainedOf);
    const report: ReconcileReport = {
      ...this.#base(account),
      status: 'ok',
      from: iso(options.since ?? cursor?.time ?? now),
      rows: changes.length,
      explained: matching.explained.length,
      unexplained,
    };
    const quiet = options.trigger === 'interval' && changes.length === 0;
    if (quiet) for (const a of answers) this.#deps.quiet?.(account.name, a);
    else await this.#record(account, options, answers, { rows: changes.length, unexplained });
    if (cursor !== undefined) {
      const newest = read.rows.at(-1)?.time ?? cursor.time;
      const horizon = Math.min(now, newest) - HORIZON_MS - toleranceMs;
      this.#save(account, {
        activity: read.lastRead ?? cursor.activity,
        time: now,
        auditOffset: resumeOffset(facts.facts(), horizon, end),
        used: stillUsed(used, matching.explained, operations, horizon),
      });
    }
    // A look back (`since`) is the owner asking: the answer goes to the asker, its line to
    // the log. What it finds behind the cursor was told and counted when the cursor
    // passed it; what lies beyond is told by the next pass from the cursor (which a look
    // back does not move), so telling or counting here would only say it twice.
    if (unexplained.length > 0 && options.since === undefined)
      await this.#tell(account, report, options.trigger);
    return report;
  }

  #base(account: ReconcileAccount): Pick<ReconcileReport, 'instance' | 'instances' | 'user'> {
    return { instance: account.name, instances: account.instances, user: account.user };
  }

  /** The `reconcile` line of a pass (its own request ids with it). */
  async #record(
    account: ReconcileAccount,
    options: PassOptions,
    answers: readonly NextcloudAnswer[],
    found: { rows: number; unexplained: readonly unknown[]; started?: true; problem?: string },
  ): Promise<boolean> {
    return this.#deps.write({
      event: 'reconcile',
      instances: [...account.instances],
      trigger: options.trigger,
      ...(options.since === undefined ? {} : { since: iso(options.since) }),
      ...(found.started === true ? { started: true } : {}),
      ...(found.problem === undefined ? {} : { problem: found.problem }),
      rows: found.rows,
      unexplained: found.unexplained.length,
      ...(found.unexplained.length === 0
        ? {}
        : { changes: found.unexplained.slice(0, LISTED_CHANGES) }),
      ...answerFields(answers),
    });
  }

  async #failed(
    account: ReconcileAccount,
    options: PassOptions,
    answers: readonly NextcloudAnswer[],
    error: unknown,
  ): Promise<ReconcileReport> {
    const off = isNextcloudError(error) && error.code === 'not_found';
    const problem = isNextcloudError(error)
      ? error.message
      : 'the reconciliation failed; see the broker log';
    if (!isNextcloudError(error))
      this.#deps.logger.error('reconciliation failed', {
        instance: account.name,
        error: errorDetail(error),
      });
    else
      this.#deps.logger.warn('reconciliation not possible now', {
        instance: account.name,
        problem,
      });
    // Security: even a failed pass records the ids of the requests it sent: a command's in
    // its line; the daemon's with the quiet ones (a server without the Activity app, or
    // down, would otherwise add a line every interval).
    if (options.trigger === 'interval')
      for (const a of answers) this.#deps.quiet?.(account.name, a);
    else await this.#record(account, options, answers, { rows: 0, unexplained: [], problem });
    return notCompared(account, off ? 'off' : 'unreachable', problem);
  }

  /**
   * Counts, logs and tells the owner of a pass's unexplained changes. The log line is for
   * the host's journal, where an owner approving in Matrix would otherwise find nothing.
   */
  async #tell(
    account: ReconcileAccount,
    report: ReconcileReport,
    trigger: ReconcileTrigger,
  ): Promise<void> {
    this.#deps.counted?.(account.name, report.unexplained.length);
    this.#deps.logger.warn('Nextcloud shows changes the broker did not make', {
      instances: [...account.instances],
      user: account.user,
      trigger,
      unexplained: report.unexplained.length,
      // Security: paths are names whoever used the account chose: escaped (no control
      // or invisible character reaches the journal) and capped; only the first few.
      changes: report.unexplained
        .slice(0, LOGGED_CHANGES)
        .map(
          (c) =>
            `${c.time} ${c.type} ${c.old_path === undefined ? '' : `${escapeForReason(c.old_path, 200)} → `}${escapeForReason(c.path, 200)}`,
        ),
      next_step: 'run `broker reconcile --json`; see the runbook, "Unexplained changes"',
    });
    try {
      await this.#deps.tell?.(report);
    } catch (error) {
      this.#deps.logger.warn('unexplained changes not told', {
        instance: account.name,
        error: errorDetail(error),
      });
    }
  }

  #cursor(account: ReconcileAccount): Cursor | undefined {
    if (this.#cursors === undefined) {
      const loaded = this.#deps.cursors.load();
      if (!loaded.ok) {
        this.#deps.logger.warn('reconciliation cursor unreadable; starting over from now', {
          problem: loaded.problem,
        });
        this.#deps.cursors.setAside();
      }
      this.#cursors = loaded.ok ? loaded.cursors : new Map();
    }
    return this.#cursors.get(account.key);
  }

  #save(account: ReconcileAccount, cursor: Cursor): void {
    const cursors = this.#cursors ?? new Map<string, Cursor>();
    cursors.set(account.key, cursor);
    this.#cursors = cursors;
    this.#deps.cursors.save(cursors);
  }
}

/** What each operation has explained so far, for those that may still explain a change. */
function stillUsed(
  before: ReadonlyMap<string, number>,
  explained: readonly { readonly by: string }[],
  operations: readonly AuditedOperation[],
  horizon: number,
): Map<string, number> {
  const counts = new Map(before);
  for (const { by } of explained) counts.set(by, (counts.get(by) ?? 0) + 1);
  const live = new Set(
    operations
      .filter((op) => op.end === undefined || op.end >= horizon)
      .map((op) => op.correlationId),
  );
  return new Map([...counts].filter(([id]) => live.has(id)));
}
