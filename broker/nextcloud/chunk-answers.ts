/**
 * The answers of a chunked upload's chunk PUTs still outstanding (chunked.ts). A chunk's
 * bytes go out one after another (they come from one body), but Nextcloud's answer to
 * each (it writes the chunk, then hashes it) comes later: waiting for it before sending
 * the next chunk idles the connection, so up to `MAX_OUTSTANDING` answers are awaited
 * alongside the next chunks. Nextcloud accepts chunks in any order and assembles them
 * by name on the `MOVE`.
 */

/** Answers awaited at once; Nextcloud 31+ announces 5 parallel chunks as its limit. */
export const MAX_OUTSTANDING = 3;

export class ChunkAnswers {
  readonly #pending = new Set<Promise<void>>();
  /** The first chunk that failed, with why; later ones were cut because of it. */
  failure: unknown;

  readonly #onFailure: AbortController;

  constructor(onFailure: AbortController) {
    this.#onFailure = onFailure;
  }

  /**
   * Adds a chunk's answer; resolves once its bytes were sent (`sent`) and fewer than
   * `MAX_OUTSTANDING` answers are outstanding. Rejects with the first failure.
   */
  async add(answer: Promise<void>, sent: Promise<unknown>): Promise<void> {
    const tracked = answer.then(
      () => {
        this.#pending.delete(tracked);
      },
      (error: unknown) => {
        this.#pending.delete(tracked);
        if (this.failure === undefined) this.failure = error;
        this.#onFailure.abort();
        throw error;
      },
    );
    // Handled here: a failure surfaces through `race` below or through `all`.
    tracked.catch(() => undefined);
    this.#pending.add(tracked);
    // An answer before the last byte (a 507, a cut) ends the wait for the bytes; a body
    // that failed is reported by its request (the transport names the cause).
    const bytesOut = await Promise.race([
      sent.then(
        () => true,
        () => false,
      ),
      tracked.then(() => true),
    ]);
    if (!bytesOut) await tracked;
    while (this.#pending.size >= MAX_OUTSTANDING) await Promise.race(this.#pending);
    this.#throwIfFailed();
  }

  /** Resolves once every chunk answered; rejects with the first failure. */
  async all(): Promise<void> {
    await Promise.all(this.#pending);
    this.#throwIfFailed();
  }

  /** Resolves once every chunk answered or failed (before the folder is deleted). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#pending);
  }

  #throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
