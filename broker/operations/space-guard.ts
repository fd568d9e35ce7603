/**
 * Nothing is ever permanently deleted, not even by Nextcloud on the agent's behalf. With
 * a quota, Nextcloud's background job deletes the oldest trash bin items and versions
 * (the owner's own, outside any grant) once they take half the free space (space-rule.ts).
 * So before each upload (push, checkin), each trash and each move between owners' spaces
 * (the bytes leave one user's space for another's: judged as an upload into the target's),
 * the broker reads whose space the write lands in and how much of it there is
 * (nextcloud/space.ts), adds what its own
 * writes in flight will change (space-ledger.ts: judged together, so concurrent writes
 * cannot each see the same free space), and refuses with `insufficient_space`:
 *
 * - in the account's own space, what would leave the trash bin at or above half the free
 *   space, or within a tenth of the quota of it;
 * - in a folder another user shared (their space: `oc:owner-id`), every write while that
 *   user has a quota, since their trash bin and versions cannot be seen at all, unless the
 *   instance's config declares that the server keeps young trash and every version from
 *   space-driven expiry (config/retention.ts); then what would take more than the free
 *   space Nextcloud shows of them.
 *
 * docs/nextcloud-behaviour.md#space-driven-expiry says what this covers and what not.
 * Calendar events take no space here: Nextcloud keeps them in its database, outside the
 * files quota (observed on 34 and 29), so they reserve nothing.
 */
import type { Clock } from '../base/domain.js';
import { failure, refused, type Envelope } from '../base/envelope.js';
import { keepsFromSpaceExpiry, type Retention } from '../config/retention.js';
import type { OwnSpace, SharerSpace, Space } from '../nextcloud/space.js';
import { OperationRefusal, type Allowed } from './pipeline.js';
import type { NextcloudPort } from './ports.js';
import { SpaceLedger, type ReadingTime, type Reservation } from './space-ledger.js';
import { SpaceReadings, type Reading } from './space-readings.js';
import {
  atWorst,
  bytesText,
  headroomOf,
  spaceAfter,
  type SpaceChange,
  type SpaceFigures,
} from './space-rule.js';

export { bytesText, headroomOf, spaceAfter } from './space-rule.js';
export type { SpaceChange, SpaceVerdict } from './space-rule.js';

/**
 * How long after a change the account's own figures may not show it: none. `cloud/user`
 * and the trash listing are computed per request (observed on 34 and 29: a PUT's bytes
 * are in the next `cloud/user`), and a reading counts a write unless it began strictly
 * after the write settled.
 */
export const OWN_LAG_MS = 0;

/**
 * How long a sharer's `quota-available-bytes` may not show a change: Nextcloud caches it
 * for five minutes per user and path (observed on 34 and 29), plus a margin.
 */
export const SHARER_LAG_MS = 5 * 60_000 + 30_000;

/**
 * A write the guard weighs: an upload to `path` (replacing a file, or a new one), a trash,
 * or a move from `from` to a new `path` in another user's space (the item's bytes).
 */
export type SpaceWrite =
  | {
      readonly kind: 'upload';
      readonly path: string;
      readonly bytes: number;
      readonly replaces: boolean;
    }
  | { readonly kind: 'trash'; readonly path: string }
  | { readonly kind: 'move'; readonly from: string; readonly path: string; readonly bytes: number };

/** How a refusal names the write. */
const WRITE_WORDS: Record<SpaceWrite['kind'], string> = {
  upload: 'this upload',
  trash: 'trashing this',
  move: 'this move',
};

/**
 * Whether two readings are of one user's space: both this account's, or both of the same
 * named sharer (a mount that names no owner is never taken for another).
 */
function sameSpace(a: Space, b: Space): boolean {
  if (a.whose === 'own' || b.whose === 'own') return a.whose === b.whose;
  return a.owner !== '' && a.owner === b.owner;
}

export interface SpaceGuardDeps {
  readonly now: Clock;
  /** What each instance's config declares of the server's retention (by instance name). */
  readonly retention: ReadonlyMap<string, Retention | undefined>;
  readonly ledger?: SpaceLedger;
  /** Recent readings to reuse (default: kept REUSE_MS, space-readings.ts). */
  readonly readings?: SpaceReadings;
}

const NO_HOLD: Reservation = { settle: () => undefined };

/** The folder a new file at `path` goes into ('' = the root). */
function folderOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut < 0 ? '' : path.slice(0, cut);
}

function refusal(envelope: Envelope): OperationRefusal {
  return new OperationRefusal(envelope);
}

/**
 * Readings taken afresh after a refusal on one that may be out of date: writes of the
 * broker's own keep committing under a busy agent, so a bound, after which the refusal
 * stands (it errs toward refusing, never toward admitting).
 */
const MAX_REREADS = 2;

export class SpaceGuard {
  readonly #now: Clock;
  readonly #retention: ReadonlyMap<string, Retention | undefined>;
  readonly ledger: SpaceLedger;
  readonly readings: SpaceReadings;

  constructor(deps: SpaceGuardDeps) {
    this.#now = deps.now;
    this.#retention = deps.retention;
    this.ledger = deps.ledger ?? new SpaceLedger({ now: deps.now });
    this.readings = deps.readings ?? new SpaceReadings(deps.now);
  }

  /**
   * An early answer (a ticket): refuses what would not be admitted now, with the writes
   * in flight; holds nothing (the write itself is judged again when it runs).
   */
  async check(client: NextcloudPort, allowed: Allowed, write: SpaceWrite): Promise<void> {
    await this.#weigh(client, allowed, write, false);
  }

  /**
   * Security: refuses a write that would let Nextcloud's space-driven expiry delete trash
   * bin items or versions (the owner's, or a sharer's), judged together with the broker's
   * other writes in flight; nothing was sent. Admitted, the write holds its bytes until
   * the caller settles the reservation (once it committed or failed).
   */
  reserve(client: NextcloudPort, allowed: Allowed, write: SpaceWrite): Promise<Reservation> {
    return this.#weigh(client, allowed, write, true);
  }

  /**
   * Security: a move between two users' spaces (this account's and a folder another user
   * shared, either way, or two sharers') carries the item's bytes into the target's space,
   * where Nextcloud's expiry weighs them as it weighs an upload's (seen on 34 and 29: three
   * moves of 21 MB into a sharer's folder left his trash bin over half his free space, and
   * his next save purged it). So it is judged and held as an upload of the item's size
   * (`oc:size`) into the target's folder, by the same rule; nothing was sent when refused.
   * Call it inside the move's namespace step (nextcloud/files.ts) so nothing the broker
   * does moves the item between the check and the MOVE. A rename in place, or a move
   * within one user's space, changes no one's space: nothing to judge or hold.
   */
  async reserveMove(
    client: NextcloudPort,
    allowed: Allowed,
    move: { readonly from: string; readonly to: string },
  ): Promise<Reservation> {
    const { from, to } = move;
    if (folderOf(from) === folderOf(to)) return NO_HOLD;
    const [source, target] = await Promise.all([
      client.space({ path: from, item: true }, allowed.signal),
      this.#target(client, allowed, folderOf(to)),
    ]);
    if (sameSpace(source, target.reading.space)) return NO_HOLD;
    const write: SpaceWrite = { kind: 'move', from, path: to, bytes: source.item ?? 0 };
    return this.#judgeReading(client, allowed, write, target, true);
  }

  async #weigh(
    client: NextcloudPort,
    allowed: Allowed,
    write: SpaceWrite,
    hold: boolean,
  ): Promise<Reservation> {
    if (write.kind === 'trash') {
      const takenAt = this.#now();
      const space = await client.space({ path: write.path, item: true }, allowed.signal);
      return this.#judge(client, allowed, write, { takenAt, space }, hold);
    }
    const folder = write.kind === 'upload' && write.replaces ? write.path : folderOf(write.path);
    const target = await this.#target(client, allowed, folder);
    return this.#judgeReading(client, allowed, write, target, hold);
  }

  /** The space of a folder an upload goes into: maybe read a few seconds ago (space-readings.ts). */
  async #target(
    client: NextcloudPort,
    allowed: Allowed,
    path: string,
  ): Promise<{ reading: Reading; refresh: () => Promise<Reading> }> {
    const key = `${allowed.instance}\u0000${path}`;
    const read = () => client.space({ path, item: false }, allowed.signal);
    return {
      reading: await this.readings.get(key, read),
      refresh: () => this.readings.refresh(key, read),
    };
  }

  async #judgeReading(
    client: NextcloudPort,
    allowed: Allowed,
    write: SpaceWrite,
    { reading, refresh }: { reading: Reading; refresh: () => Promise<Reading> },
    hold: boolean,
  ): Promise<Reservation> {
    let current = reading;
    for (let reread = 0; ; reread += 1) {
      try {
        return await this.#judge(client, allowed, write, current, hold);
      } catch (error) {
        if (!(error instanceof OperationRefusal)) throw error;
        // A refusal stands only on a reading that cannot be out of date: not one kept
        // for a few seconds (the owner may have freed space or raised the quota since),
        // and not one taken while a write of the broker's own committed (Nextcloud may
        // show its bytes, which the ledger still holds: counted twice, two pushes that
        // fit one by one were refused). Security: a reading taken afresh is judged by the
        // same rule and ledger; this only ever turns a refusal into an exact judgement.
        const outOfDate = current.reused || this.ledger.changedSince(current.takenAt);
        if (!outOfDate || reread >= MAX_REREADS) throw error;
        current = await refresh();
      }
    }
  }

  /** Judges `write` on a reading of its target's space (and, for a trash from a share, this account's). */
  async #judge(
    client: NextcloudPort,
    allowed: Allowed,
    write: SpaceWrite,
    { space, takenAt }: { readonly space: Space; readonly takenAt: number },
    hold: boolean,
  ): Promise<Reservation> {
    const bytes = write.kind === 'trash' ? (space.item ?? 0) : write.bytes;
    const what = WRITE_WORDS[write.kind];
    if (space.whose === 'own') {
      const change: SpaceChange = { kind: write.kind === 'trash' ? 'trash' : 'upload', bytes };
      return this.#own(allowed, space, { takenAt, lagMs: OWN_LAG_MS }, change, what, hold);
    }
    const reading = { takenAt, lagMs: SHARER_LAG_MS };
    const sharer = this.#sharer(allowed, write, space, reading, bytes, hold);
    if (write.kind !== 'trash') return sharer;
    // Security: Nextcloud also puts a copy of an item trashed from a share into this
    // account's trash bin, which its own expiry weighs: judged as well.
    try {
      const ownTakenAt = this.#now();
      const own = await client.ownSpace(allowed.signal);
      const copy = this.#own(
        allowed,
        own,
        { takenAt: ownTakenAt, lagMs: OWN_LAG_MS },
        { kind: 'trash_copy', bytes },
        'the copy of this item that Nextcloud puts in this account’s trash bin',
        hold,
      );
      return { settle: () => (sharer.settle(), copy.settle()) };
    } catch (error) {
      sharer.settle();
      throw error;
    }
  }

  #fresh(takenAt: number): void {
    // Security: a reading older than the ledger keeps settled reservations could miss
    // one of the broker's own writes; never judged.
    if (this.ledger.tooOld(takenAt))
      throw refusal(
        failure(
          'nextcloud_unavailable',
          'Nextcloud took too long to answer how much space is left, so the broker cannot tell whether the write is safe; nothing was done; try again later',
          true,
        ),
      );
  }

  #own(
    allowed: Allowed,
    space: OwnSpace,
    reading: ReadingTime,
    change: SpaceChange,
    what: string,
    hold: boolean,
  ): Reservation {
    // Without a quota Nextcloud expires for space only on a full disk: nothing to hold.
    if (space.quota === null) return NO_HOLD;
    this.#fresh(reading.takenAt);
    const figures: SpaceFigures = { quota: space.quota, used: space.used, trash: space.trash };
    const admission = this.ledger.admit(
      `${allowed.instance}\u0000own`,
      reading,
      change,
      (pending) => {
        const seen = pending.reduce(atWorst, figures);
        const after = spaceAfter(seen, change);
        return after === null || after.short === 0 ? undefined : { seen, after };
      },
      hold,
    );
    if (admission.ok) return admission.reservation;
    const { seen, after } = admission.verdict;
    const quota = space.quota;
    const inFlight = seen.used - figures.used + (seen.trash - figures.trash);
    throw refusal(
      refused(
        'insufficient_space',
        `not enough space: ${what} (${bytesText(change.bytes)}) would leave ${bytesText(Math.max(0, after.free))} free of the ${bytesText(quota)} quota with ${bytesText(after.trash)} in the trash bin` +
          (inFlight > 0
            ? ` (counting ${bytesText(inFlight)} of the broker's writes still in progress)`
            : '') +
          `, too close to where Nextcloud deletes trash bin items and old versions to make room (the broker keeps a tenth of the quota, ${bytesText(headroomOf(quota))}, for the owner's own saves); ${bytesText(after.short)} more free space is needed; nothing was done`,
        {
          hint: 'ask the owner to free space or raise the quota (emptying the trash bin is their call); retrying as is will be refused again',
          space: {
            quota,
            used: space.used,
            trash: space.trash,
            in_flight: inFlight,
            bytes: change.bytes,
            needed: after.short,
          },
        },
      ),
    );
  }

  #sharer(
    allowed: Allowed,
    write: SpaceWrite,
    space: SharerSpace,
    reading: ReadingTime,
    bytes: number,
    hold: boolean,
  ): Reservation {
    // A sharer without a quota: Nextcloud expires their trash and versions only on a full disk.
    if (space.free === 'unlimited') return NO_HOLD;
    const whose = space.owner === '' ? 'a mount that names no owner' : `'${space.owner}'`;
    const what = WRITE_WORDS[write.kind];
    // Security: the sharer's trash bin and versions are invisible to this account, and
    // the expiry weighs them: never guess toward a purge. Only the owner's declaration
    // that the server keeps young trash and every version from it lets a write through.
    if (!keepsFromSpaceExpiry(this.#retention.get(allowed.instance)))
      throw refusal(
        refused(
          'insufficient_space',
          `"${write.path}" is in a folder ${whose} shared with this account, and a quota limits ${space.owner === '' ? 'it' : 'their space'}: Nextcloud deletes their trash bin items and old versions to make room once those take half of their free space, and this account cannot see their trash bin or versions, so the broker cannot tell whether ${what} would make that happen; nothing was done`,
          {
            hint: `ask the owner: ${whose} can lift the quota, or the server can be set to keep young trash and versions from space-driven expiry and that declared in the broker's config (instances.${allowed.instance}.retention; \`broker doctor\` explains it); retrying as is will be refused again`,
            space: { owner: space.owner, free: space.free, bytes, rule: 'sharer_quota' },
          },
        ),
      );
    if (write.kind === 'trash' || space.free === 'unknown') return NO_HOLD;
    this.#fresh(reading.takenAt);
    const free = space.free;
    const admission = this.ledger.admit(
      `${allowed.instance}\u0000sharer:${space.owner}`,
      reading,
      { kind: 'upload', bytes },
      (pending) => {
        const held = pending.reduce((sum, c) => sum + (c.kind === 'upload' ? c.bytes : 0), 0);
        return free - held - bytes >= 0 ? undefined : { held };
      },
      hold,
    );
    if (admission.ok) return admission.reservation;
    const { held } = admission.verdict;
    throw refusal(
      refused(
        'insufficient_space',
        `not enough space: ${what} (${bytesText(bytes)}) into a folder ${whose} shared with this account would take more than the ${bytesText(free)} Nextcloud shows free in their space (up to five minutes old)${held > 0 ? `, less ${bytesText(held)} of the broker's writes since` : ''}; nothing was done`,
        {
          hint: `ask ${whose} to free space or raise their quota; retrying as is will be refused again`,
          space: { owner: space.owner, free, in_flight: held, bytes, rule: 'sharer_free' },
        },
      ),
    );
  }
}
