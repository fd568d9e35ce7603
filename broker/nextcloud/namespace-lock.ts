/**
 * One instance's namespace changes, one at a time. A `trash` reads a folder's whole
 * subtree for received shares and mounts before its DELETE (mounts.ts), which takes
 * seconds on a large folder; a `move` of a received share into that folder in between
 * would make the DELETE unshare it for good. So every verb that changes which item is
 * where (mkdir, move, trash: check and DELETE together) runs inside `run`, and no other
 * of them starts on the same instance until it has finished.
 *
 * First come, first served. A waiter whose signal fires (its grant ended) leaves the
 * queue without running and without holding up those behind it.
 */
import { NextcloudError } from './errors.js';

export class NamespaceLock {
  /** Settles when the last queued holder has finished (never rejects). */
  #tail: Promise<void> = Promise.resolve();
  #waiting = 0;
  #held = false;

  readonly #instance: string;

  constructor(instance: string) {
    this.#instance = instance;
  }

  /** Holders and waiters now (for tests and logs). */
  get busy(): { held: boolean; waiting: number } {
    return { held: this.#held, waiting: this.#waiting };
  }

  /** Runs `task` once every earlier holder has finished; the next starts when it settles. */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const before = this.#tail;
    let release = (): void => undefined;
    const mine = new Promise<void>((resolve) => (release = resolve));
    // The next holder waits for this one and for everything before it.
    this.#tail = before.then(() => mine);
    this.#waiting += 1;
    try {
      await waitFor(before, signal, this.#instance);
    } catch (error) {
      this.#waiting -= 1;
      release();
      throw error;
    }
    this.#waiting -= 1;
    this.#held = true;
    try {
      return await task();
    } finally {
      this.#held = false;
      release();
    }
  }
}

/** Resolves with `turn`, or rejects as soon as `signal` fires. */
function waitFor(turn: Promise<void>, signal: AbortSignal | undefined, instance: string) {
  const cancelled = (): NextcloudError =>
    new NextcloudError(
      'cancelled',
      `the broker stopped a change on instance '${instance}' while it waited for the one before it: the operation was cancelled`,
    );
  if (signal === undefined) return turn;
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    void turn.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
