/**
 * A set that forgets its oldest entries beyond `limit`: remembers which Matrix events
 * were already handled without growing for ever.
 */
export class BoundedSet {
  readonly #items = new Set<string>();

  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be >= 1');
  }

  has(value: string): boolean {
    return this.#items.has(value);
  }

  /** Adds `value`; false when it was already there. */
  add(value: string): boolean {
    if (this.#items.has(value)) return false;
    this.#items.add(value);
    if (this.#items.size > this.#limit) {
      // Sets iterate in insertion order: the first value is the oldest.
      const oldest = this.#items.values().next();
      if (!oldest.done) this.#items.delete(oldest.value);
    }
    return true;
  }

  get size(): number {
    return this.#items.size;
  }
}
