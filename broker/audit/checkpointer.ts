/**
 * Keeps audit.checkpoint following the durable head. Coalesced: at most one checkpoint
 * write in flight, always of the latest durable head, written once the log has been
 * quiet for QUIET_MS, and while appends keep coming at least every MAX_LAG_MS. Each
 * write costs two fsyncs; written right after an append (as before), they competed with
 * the very next append's fsync, which a call waits for before it answers (measured: a
 * `list` at one agent took ~0.5 ms longer at its p50). Waiting for a quiet moment keeps
 * them off that path. The log may therefore run ahead of the checkpoint by up to
 * MAX_LAG_MS of records, exactly as after a crash between the two writes (which open()
 * accepts); close() and open() bring it level.
 */
import { join } from 'node:path';
import type { ChainHead } from './chain.js';
import { CHECKPOINT_FILE, writeCheckpoint } from './checkpoint.js';
import type { FailureState } from './failure.js';
import type { AuditFs } from './fs.js';
import { withTimeout } from './timeout.js';

/**
 * The checkpoint is written once no append came for this long. 50 ms was too short for
 * one agent's calls against a real Nextcloud, which come about that far apart (a
 * PROPFIND takes ~40 ms): the checkpoint's two fsyncs then ran between every two calls,
 * beside the next call's intent fsync. Under a steady stream MAX_LAG_MS still bounds it.
 */
export const QUIET_MS = 200;
/** Under a steady stream of appends, it is never older than this. */
export const MAX_LAG_MS = 1000;

export interface CheckpointerDeps {
  fs: AuditFs;
  dir: string;
  timeoutMs: number;
  failure: FailureState;
}

export class Checkpointer {
  #target: ChainHead;
  #running: Promise<void> | undefined;
  #cutPause: (() => void) | undefined;
  #hurry = false;
  /** When the head last advanced (performance.now()). */
  #advancedAt = 0;

  /** @param written what the checkpoint file holds now (seq -1: no file yet). */
  readonly #deps: CheckpointerDeps;
  #written: ChainHead;

  constructor(deps: CheckpointerDeps, written: ChainHead) {
    this.#deps = deps;
    this.#written = written;
    this.#target = written;
  }

  /** Records a new durable head and makes sure a write of it follows. */
  advance(head: ChainHead): void {
    if (head.seq > this.#target.seq) this.#target = head;
    this.#advancedAt = performance.now();
    this.#schedule();
  }

  /** Writes the latest head now (no spacing) and waits; rejects if the log has failed. */
  async flush(head: ChainHead): Promise<void> {
    if (head.seq > this.#target.seq) this.#target = head;
    this.#hurry = true;
    this.#cutPause?.();
    this.#schedule();
    try {
      await this.#running;
    } finally {
      this.#hurry = false;
    }
    const later = this.#deps.failure.later();
    if (later !== undefined) throw later;
  }

  #schedule(): void {
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
  }

  async #run(): Promise<void> {
    while (!this.#deps.failure.failed && this.#written.seq < this.#target.seq) {
      if (!this.#hurry) await this.#settle();
      const target = this.#target;
      try {
        await withTimeout(
          writeCheckpoint(this.#deps.fs, this.#deps.dir, target),
          this.#deps.timeoutMs,
          'checkpoint',
        );
        this.#written = target;
      } catch (err) {
        this.#deps.failure.fail(err, 'checkpoint', join(this.#deps.dir, CHECKPOINT_FILE));
      }
    }
  }

  /**
   * Resolves once no append came for QUIET_MS, or MAX_LAG_MS after it began, whichever
   * is first; flush() cuts it short. One timer, re-armed only when it fires early.
   */
  #settle(): Promise<void> {
    const deadline = performance.now() + MAX_LAG_MS;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const check = (): void => {
        const now = performance.now();
        const wake = Math.min(this.#advancedAt + QUIET_MS, deadline);
        if (now >= wake) done();
        else timer = setTimeout(check, wake - now);
      };
      this.#cutPause = done;
      check();
    }).finally(() => {
      this.#cutPause = undefined;
    });
  }
}
