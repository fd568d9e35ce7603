/**
 * The space the broker's own writes hold while Nextcloud's figures cannot show them yet.
 *
 * The guard reads an account's space and then writes; two writes that read at once each
 * saw the same free space, and together they could take the account into Nextcloud's
 * expiry zone (four 12 MiB pushes started together all passed where one by one only two
 * would have). So every admitted write reserves what it will change here, judged together
 * with every reservation a reading does not reflect yet, and keeps it until it has
 * committed or failed (`settle`) **and** any reading still to be judged is one taken after
 * it, allowing for the figure's lag (a reading "reflects" a settled reservation when it
 * began more than `lagMs` after the settle: 0 for `cloud/user` and the trash listing,
 * which Nextcloud computes per request; five minutes and more for a received share's
 * `quota-available-bytes`, which it caches).
 *
 * How fresh a reading must be: a reading may be judged while it is younger than
 * `maxReadingAgeMs` (default MAX_READING_AGE_MS); a settled reservation is forgotten only
 * once `lagMs + maxReadingAgeMs` have passed since its settle, so every reading that may
 * still be judged counts it unless it reflects it. A reading kept and reused (a cache,
 * within that age) therefore never misses a write of the broker's own; what it can miss
 * is the owner's own writes since it was taken, which the headroom of space-rule.ts
 * covers as it covers the moment between any reading and its commit. A cache should keep
 * that moment short: reuse a reading for a few seconds (docs/nextcloud-behaviour.md says
 * how long), never up to this limit.
 *
 * Pure: the clock is injected; no I/O. Accounts are named by the caller (an instance and
 * whose space: the account's own, or a sharer's).
 */
import type { Clock } from '../base/domain.js';
import type { SpaceChange } from './space-rule.js';

/** The oldest a reading may be when it is judged (a read of three slow requests fits). */
export const MAX_READING_AGE_MS = 120_000;

interface Entry {
  readonly change: SpaceChange;
  readonly lagMs: number;
  settledAt: number | undefined;
}

/** A reading as the ledger needs it: when it began, and how stale its figures may be. */
export interface ReadingTime {
  /** When the read began (ms, the broker's clock). */
  readonly takenAt: number;
  /** How long after a change Nextcloud's figure may still not show it. */
  readonly lagMs: number;
}

/** A write's hold on space: settle it once the write committed or failed (idempotent). */
export interface Reservation {
  settle(): void;
}

export type Admission<V> = { ok: true; reservation: Reservation } | { ok: false; verdict: V };

export class SpaceLedger {
  readonly #now: Clock;
  readonly #maxAgeMs: number;
  readonly #accounts = new Map<string, Set<Entry>>();

  constructor(deps: { now: Clock; maxReadingAgeMs?: number }) {
    this.#now = deps.now;
    this.#maxAgeMs = deps.maxReadingAgeMs ?? MAX_READING_AGE_MS;
  }

  /** Whether a reading taken at `takenAt` is too old to be judged now. */
  tooOld(takenAt: number): boolean {
    return this.#now() - takenAt >= this.#maxAgeMs;
  }

  /**
   * The broker's own changes this reading does not reflect: every reservation still open,
   * and every settled one the reading began too early to show.
   */
  unreflected(account: string, reading: ReadingTime): SpaceChange[] {
    this.#forget();
    const out: SpaceChange[] = [];
    for (const entry of this.#accounts.get(account) ?? []) {
      // Security: a reading reflects a settled write only when it began strictly later
      // than the settle plus the figure's lag; a tie counts the write (never under-counts).
      const reflected =
        entry.settledAt !== undefined && reading.takenAt > entry.settledAt + entry.lagMs;
      if (!reflected) out.push(entry.change);
    }
    return out;
  }

  /**
   * Judges `change` against this reading and what it does not reflect, and reserves it
   * when `judge` admits it, in one synchronous step: no other admission can come between
   * the judgement and the reservation. `judge` gets the unreflected changes and answers
   * undefined to admit, or its verdict to refuse. With `hold: false` (an early answer,
   * not the write itself) it only judges: an admission then holds nothing.
   */
  admit<V>(
    account: string,
    reading: ReadingTime,
    change: SpaceChange,
    judge: (pending: readonly SpaceChange[]) => V | undefined,
    hold = true,
  ): Admission<V> {
    if (this.tooOld(reading.takenAt))
      throw new RangeError('a space reading older than the ledger keeps reservations for');
    const verdict = judge(this.unreflected(account, reading));
    if (verdict !== undefined) return { ok: false, verdict };
    if (!hold) return { ok: true, reservation: { settle: () => undefined } };
    const entry: Entry = { change, lagMs: reading.lagMs, settledAt: undefined };
    const entries = this.#accounts.get(account) ?? new Set<Entry>();
    entries.add(entry);
    this.#accounts.set(account, entries);
    return {
      ok: true,
      reservation: {
        settle: () => {
          entry.settledAt ??= this.#now();
        },
      },
    };
  }

  /**
   * Whether a write of the broker's own settled at or after `takenAt`, or is still open:
   * a reading begun then may already show its bytes while the ledger still counts them
   * (Nextcloud answered after the commit). Counting them twice only ever refuses, never
   * admits, but a refusal judged on such a reading is worth a reading taken afresh.
   */
  changedSince(takenAt: number): boolean {
    this.#forget();
    for (const entries of this.#accounts.values())
      for (const entry of entries)
        if (entry.settledAt === undefined || entry.settledAt >= takenAt) return true;
    return false;
  }

  /** Reservations held (open or settled but not yet forgotten), for tests and metrics. */
  held(account: string): number {
    this.#forget();
    return this.#accounts.get(account)?.size ?? 0;
  }

  /** Drops what no reading that may still be judged can fail to reflect. */
  #forget(): void {
    const now = this.#now();
    for (const [account, entries] of this.#accounts) {
      for (const entry of entries)
        if (entry.settledAt !== undefined && now > entry.settledAt + entry.lagMs + this.#maxAgeMs)
          entries.delete(entry);
      if (entries.size === 0) this.#accounts.delete(account);
    }
  }
}
