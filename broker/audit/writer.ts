/**
 * Group commit for the audit log: appends queue up; one writer takes the whole queue,
 * writes it with one write and one fsync, then resolves every append of the batch.
 * Security: no append resolves before its own line is fsynced; a failed or timed-out
 * batch rejects all of its appends and fails the log for every later one.
 */
import { secondsSince } from '../base/metrics.js';
import type { ChainHead } from './chain.js';
import type { FailureState } from './failure.js';
import { type AuditFileHandle, writeAll } from './fs.js';
import type { AuditRecord } from './record.js';
import { withTimeout } from './timeout.js';

/** Upper bound of one group-commit write. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

interface Pending {
  record: AuditRecord;
  bytes: Buffer;
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

  readonly #deps: WriterDeps;

  constructor(deps: WriterDeps) {
    this.#deps = deps;
    this.#durable = deps.size;
  }

  get durableSize(): number {
    return this.#durable;
  }

  /** Queues `bytes` (the record's line); resolves with `record` once they are fsynced. */
  submit(record: AuditRecord, bytes: Buffer): Promise<AuditRecord> {
    return new Promise<AuditRecord>((resolve, reject) => {
      this.#queue.push({ record, bytes, resolve, reject });
      this.#kick();
    });
  }

  /** Writes and fsyncs bytes outside the queue (open() only, before any append). */
  async writeNow(bytes: Buffer): Promise<void> {
    try {
      await withTimeout(this.#writeAndSync(bytes), this.#deps.timeoutMs, 'write');
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
    await withTimeout(this.#writeAndSync(bytes), this.#deps.timeoutMs, 'write');
    this.#durable = verified + bytes.length;
  }

  /** Settles once everything queued so far is written or rejected. */
  async idle(): Promise<void> {
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
      try {
        await withTimeout(
          this.#writeAndSync(Buffer.concat(batch.map((p) => p.bytes))),
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
      for (const p of batch) this.#durable += p.bytes.length;
      for (const p of batch) p.resolve(p.record);
      this.#deps.onDurable({ seq: last.seq, hash: last.hash });
    }
  }

  async #writeAndSync(bytes: Buffer): Promise<void> {
    const started = performance.now();
    await writeAll(this.#deps.handle, bytes);
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
