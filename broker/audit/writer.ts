/**
 * Group commit for the audit log: appends queue up; one writer takes the whole queue,
 * writes it with one write and one fsync, then resolves every append of the batch.
 * Security: no append resolves before its own line is fsynced; a failed or timed-out
 * batch rejects all of its appends and fails the log for every later one.
 *
 * The one exception is a line submitted as `written` (an outcome that changed nothing,
 * see AuditLog.appendWritten): it resolves once it is in the file, in its place in the
 * chain, and becomes durable with the next batch's fsync, or SYNC_SOON_MS later when no
 * batch comes; idle() and so close() fsync it too. An operation's intent, which must be
 * durable before the operation starts (docs/contracts.md), never goes this way.
 */
import { secondsSince } from '../base/metrics.js';
import type { ChainHead } from './chain.js';
import type { FailureState } from './failure.js';
import { type AuditFileHandle, writeAll } from './fs.js';
import type { AuditRecord } from './record.js';
import { withTimeout } from './timeout.js';

/** Upper bound of one group-commit write. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** How long a line written without its fsync waits for a batch whose fsync covers it. */
export const SYNC_SOON_MS = 20;

/** When an append resolves: once its line is fsynced, or once it is written. */
export type Durability = 'durable' | 'written';

interface Pending {
  record: AuditRecord;
  bytes: Buffer;
  durability: Durability;
  resolve: (r: AuditRecord) => void;
  reject: (e: unknown) => void;
}

export interface WriterDeps {
  handle: AuditFileHandle;
  file: string;
  timeoutMs: number;
  failure: FailureState;
  /** Called after each durable batch with its last record. */
  onDurable: (head: ChainHead) => void;
  /** The log file's size when the writer starts (all of it verified). */
  size: number;
  /** Seconds one batch's write+fsync took (metrics). */
  onSynced?: (seconds: number) => void;
}

export class GroupCommitWriter {
  readonly #queue: Pending[] = [];
  #draining: Promise<void> | undefined;
  /** Bytes of the file that are verified and fsynced: where a resume re-reads from. */
  #durable: number;
  /** Lines written but not yet fsynced (`written` ones): their bytes and the last record. */
  #unsynced: { bytes: number; last: AuditRecord } | undefined;
  /** The fsync of #unsynced once no batch came for SYNC_SOON_MS. */
  #syncTimer: NodeJS.Timeout | undefined;
  #syncDue = false;

  readonly #deps: WriterDeps;

  constructor(deps: WriterDeps) {
    this.#deps = deps;
    this.#durable = deps.size;
  }

  get durableSize(): number {
    return this.#durable;
  }

  /**
   * Queues `bytes` (the record's line); resolves with `record` once they are fsynced, or,
   * `written`, once they are written (see the top of this file).
   */
  submit(
    record: AuditRecord,
    bytes: Buffer,
    durability: Durability = 'durable',
  ): Promise<AuditRecord> {
    return new Promise<AuditRecord>((resolve, reject) => {
      this.#queue.push({ record, bytes, durability, resolve, reject });
      this.#kick();
    });
  }

  /** Writes and fsyncs bytes outside the queue (open() only, before any append). */
  async writeNow(bytes: Buffer): Promise<void> {
    try {
      await withTimeout(this.#write(bytes, true), this.#deps.timeoutMs, 'write');
    } catch (err) {
      throw this.#deps.failure.fail(err, 'write', this.#deps.file);
    }
    this.#durable += bytes.length;
  }

  /**
   * Resume only (resume.ts, with the queue idle): writes and fsyncs `bytes` after the
   * `verified` bytes of the file (its durable part and the tail it re-read), which all
   * become durable with them. Rejects, changing nothing here, when it fails.
   */
  async writeAfter(verified: number, bytes: Buffer): Promise<void> {
    await withTimeout(this.#write(bytes, true), this.#deps.timeoutMs, 'write');
    this.#durable = verified + bytes.length;
    // Lines written without their fsync before the failure are among the verified bytes.
    this.#unsynced = undefined;
  }

  /** Settles once everything queued so far is written and fsynced, or rejected. */
  async idle(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
    if (this.#unsynced === undefined) return;
    this.#syncDue = true;
    this.#kick();
    while (this.#draining !== undefined) await this.#draining;
  }

  #kick(): void {
    // setImmediate lets every append issued in this turn (and the continuations of the
    // last batch's callers) join one batch.
    this.#draining ??= new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#drain())
      .finally(() => {
        this.#draining = undefined;
        if (this.#queue.length > 0) this.#kick();
      });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const later = this.#deps.failure.later();
      if (later !== undefined) {
        for (const p of this.#queue.splice(0)) {
          this.#deps.failure.noteRefused();
          p.reject(later);
        }
        return;
      }
      const batch = takeBatch(this.#queue);
      // Security: a batch holding a line that must be durable is fsynced before any of
      // its appends resolves; the fsync covers every line written before it too.
      const sync = batch.some((p) => p.durability === 'durable');
      try {
        await withTimeout(
          this.#write(Buffer.concat(batch.map((p) => p.bytes)), sync),
          this.#deps.timeoutMs,
          'write',
        );
      } catch (err) {
        const failure = this.#deps.failure.fail(err, 'write', this.#deps.file);
        for (const p of batch) {
          this.#deps.failure.noteRefused();
          p.reject(failure);
        }
        continue;
      }
      const last = (batch[batch.length - 1] as Pending).record;
      const bytes = batch.reduce((n, p) => n + p.bytes.length, 0);
      this.#unsynced = { bytes: (this.#unsynced?.bytes ?? 0) + bytes, last };
      if (sync) this.#synced();
      for (const p of batch) p.resolve(p.record);
    }
    if (this.#unsynced === undefined) return;
    if (this.#syncDue) {
      await this.#syncUnsynced();
      return;
    }
    this.#syncTimer ??= setTimeout(() => {
      this.#syncTimer = undefined;
      this.#syncDue = true;
      this.#kick();
    }, SYNC_SOON_MS).unref();
  }

  /** The fsync of lines written without one (a timer's, or idle()'s). */
  async #syncUnsynced(): Promise<void> {
    this.#syncDue = false;
    if (this.#unsynced === undefined || this.#deps.failure.failed) return;
    try {
      await withTimeout(this.#write(Buffer.alloc(0), true), this.#deps.timeoutMs, 'write');
    } catch (err) {
      this.#deps.failure.fail(err, 'write', this.#deps.file);
      return;
    }
    this.#synced();
  }

  /** Everything written so far is fsynced: it is the durable part of the file now. */
  #synced(): void {
    clearTimeout(this.#syncTimer);
    this.#syncTimer = undefined;
    const done = this.#unsynced;
    if (done === undefined) return;
    this.#unsynced = undefined;
    this.#durable += done.bytes;
    this.#deps.onDurable({ seq: done.last.seq, hash: done.last.hash });
  }

  async #write(bytes: Buffer, sync: boolean): Promise<void> {
    const started = performance.now();
    if (bytes.length > 0) await writeAll(this.#deps.handle, bytes);
    if (!sync) return;
    await this.#deps.handle.sync();
    this.#deps.onSynced?.(secondsSince(started));
  }
}

function takeBatch(queue: Pending[]): Pending[] {
  let size = 0;
  let n = 0;
  while (n < queue.length) {
    const next = (queue[n] as Pending).bytes.length;
    if (n > 0 && size + next > MAX_BATCH_BYTES) break;
    size += next;
    n += 1;
  }
  return queue.splice(0, n);
}
