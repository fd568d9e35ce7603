/**
 * Outstanding checkout locks, by lock token, so the broker can release them itself when
 * the grant that allowed the checkout ends (Nextcloud's own lock expiry depends on its
 * background jobs). In memory: after a restart the locks still expire by their LOCK
 * timeout, which is never longer than the grant that allowed them.
 */
import { createHash } from 'node:crypto';

export interface Checkout {
  readonly instance: string;
  readonly path: string;
  readonly token: string;
  readonly grantIds: readonly number[];
  readonly lockedAt: number;
}

const keyOf = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export class CheckoutTable {
  readonly #byToken = new Map<string, Checkout>();

  add(checkout: Checkout): void {
    this.#byToken.set(keyOf(checkout.token), checkout);
  }

  /** The checkout holding this token on this instance and path, if the broker made it. */
  find(instance: string, path: string, token: string): Checkout | undefined {
    // Security: looked up by the token's hash; a token for another file never matches.
    const found = this.#byToken.get(keyOf(token));
    return found !== undefined && found.instance === instance && found.path === path
      ? found
      : undefined;
  }

  /** The checkout holding this token, whatever file it is for. */
  get(token: string): Checkout | undefined {
    return this.#byToken.get(keyOf(token));
  }

  remove(token: string): void {
    this.#byToken.delete(keyOf(token));
  }

  /** The checkouts relying on any of these grants. */
  forGrants(grantIds: readonly number[]): Checkout[] {
    const ended = new Set(grantIds);
    return [...this.#byToken.values()].filter((c) => c.grantIds.some((g) => ended.has(g)));
  }

  all(): Checkout[] {
    return [...this.#byToken.values()];
  }
}
