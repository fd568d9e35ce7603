/**
 * Keeps audit.checkpoint following the durable head. Coalesced: at most one checkpoint
 * write in flight, always of the latest durable head, and while appends keep coming at
 * most one per SPACING_MS, because each costs two fsyncs that compete with the log's.
 * The log may therefore run a little ahead of the checkpoint, exactly as after a crash
 * between the two writes (which open() accepts); close() and open() bring it level.
 */
import { join } from 'node:path';
import type { ChainHead } from './chain.js';
import { CHECKPOINT_FILE, writeCheckpoint } from './checkpoint.js';
import type { FailureState } from './failure.js';
import type { AuditFs } from './fs.js';
import { withTimeout } from './timeout.js';

const SPACING_MS = 25;

export interface CheckpointerDeps {
  fs: AuditFs;
  dir: string;
  timeoutMs: number;
  failure: FailureState;
}

export class Checkpointer {
  private target: ChainHead;
  private running: Promise<void> | undefined;
  private cutPause: (() => void) | undefined;
  private hurry = false;

  /** @param written what the checkpoint file holds now (seq -1: no file yet). */
  constructor(
    private readonly deps: CheckpointerDeps,
    private written: ChainHead,
  ) {
    this.target = written;
  }

  /** Records a new durable head and makes sure a write of it follows. */
  advance(head: ChainHead): void {
    if (head.seq > this.target.seq) this.target = head;
    this.schedule();
  }

  /** Writes the latest head now (no spacing) and waits; rejects if the log has failed. */
  async flush(head: ChainHead): Promise<void> {
    if (head.seq > this.target.seq) this.target = head;
    this.hurry = true;
    this.cutPause?.();
    this.schedule();
    try {
      await this.running;
    } finally {
      this.hurry = false;
    }
    const later = this.deps.failure.later();
    if (later !== undefined) throw later;
  }

  private schedule(): void {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
  }

  private async run(): Promise<void> {
    let first = true;
    while (!this.deps.failure.failed && this.written.seq < this.target.seq) {
      if (!first && !this.hurry) await this.pause(SPACING_MS);
      first = false;
      const target = this.target;
      try {
        await withTimeout(
          writeCheckpoint(this.deps.fs, this.deps.dir, target),
          this.deps.timeoutMs,
          'checkpoint',
        );
        this.written = target;
      } catch (err) {
        this.deps.failure.fail(err, 'checkpoint', join(this.deps.dir, CHECKPOINT_FILE));
      }
    }
  }

  /** A delay that flush() cuts short. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.cutPause = done;
    }).finally(() => {
      this.cutPause = undefined;
    });
  }
}
