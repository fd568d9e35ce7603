/**
 * Space readings kept for a few seconds, so that a write's ticket and its upload, or a
 * run of pushes into one folder, ask Nextcloud once, not at every step (each reading is
 * a `cloud/user` and a `PROPFIND`, sometimes a trash listing: two or three round trips
 * before an upload's first byte could go).
 *
 * How fresh a reading must be (docs/nextcloud-behaviour.md#space-driven-expiry): one
 * reused never misses a write of the broker's own, because the guard judges it with its
 * own `takenAt` and the ledger (space-ledger.ts) counts every write that had not settled
 * before then; what it can miss is the owner's own writes since it was taken, which the
 * tenth of the quota kept free covers as it covers the moment between any reading and
 * its commit (for a large upload, seconds anyway). So a reading is reused for at most
 * REUSE_MS, and only for an upload's target: a trash reads its item each time.
 */
import type { Clock } from '../base/domain.js';
import type { Space } from '../nextcloud/client.js';

/** The longest a reading is reused: a few seconds, far below the ledger's two minutes. */
export const REUSE_MS = 5_000;

/** Readings kept at once, at most (each is a few numbers). */
const MAX_KEPT = 256;

/** A reading, when it began (the broker's clock), and whether it was kept from before. */
export interface Reading {
  readonly space: Space;
  readonly takenAt: number;
  readonly reused: boolean;
}

export class SpaceReadings {
  readonly #now: Clock;
  readonly #reuseMs: number;
  readonly #kept = new Map<string, Reading>();

  constructor(now: Clock, reuseMs = REUSE_MS) {
    this.#now = now;
    this.#reuseMs = reuseMs;
  }

  /**
   * The reading kept under `key` if it began less than REUSE_MS ago, else a new one from
   * `read`, kept. Security: the reading keeps its own `takenAt`, which the ledger judges
   * against (a reading reused is exactly as old as it is).
   */
  async get(key: string, read: () => Promise<Space>): Promise<Reading> {
    const now = this.#now();
    const kept = this.#kept.get(key);
    // A clock set back makes every kept reading suspect: read again.
    if (kept !== undefined && now >= kept.takenAt && now - kept.takenAt < this.#reuseMs)
      return { ...kept, reused: true };
    return this.refresh(key, read);
  }

  /** A new reading from `read`, kept under `key` in place of any before it. */
  async refresh(key: string, read: () => Promise<Space>): Promise<Reading> {
    const takenAt = this.#now();
    const reading = { space: await read(), takenAt, reused: false };
    this.#keep(key, reading);
    return reading;
  }

  #keep(key: string, reading: Reading): void {
    this.#kept.delete(key);
    this.#kept.set(key, reading);
    const now = this.#now();
    for (const [k, r] of this.#kept)
      if (this.#kept.size > MAX_KEPT || now - r.takenAt >= this.#reuseMs) this.#kept.delete(k);
      else break;
  }
}
