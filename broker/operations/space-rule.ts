/**
 * Nextcloud's space-driven expiry, as arithmetic (docs/nextcloud-behaviour.md#space-driven-expiry).
 * With a quota, Nextcloud expires the trash bin (files_trashbin `Trashbin::expire`) and old
 * versions (files_versions `Storage::expire`) when either takes more than half of the
 * space the quota leaves free (`quota - used`), or any at all once that space is gone;
 * the background job then deletes the oldest items first: the owner's own, outside any
 * grant. Pure: the guard (space-guard.ts) reads the figures, the ledger (space-ledger.ts)
 * adds what the broker's own writes in flight will change, and this decides.
 */

/** What one account looks like to the rule. */
export interface SpaceFigures {
  /** The quota in bytes; null when unlimited (Nextcloud then uses the disk). */
  readonly quota: number | null;
  /** Bytes the account's files take (trash and versions not included, as in Nextcloud). */
  readonly used: number;
  /** Bytes in the trash bin. */
  readonly trash: number;
}

/**
 * What an operation changes in one account: an upload adds `bytes` of files; a trash
 * moves them into the trash bin; a `trash_copy` adds them to the trash bin only (an item
 * trashed from a folder someone else shared: Nextcloud puts it in the sharer's trash bin
 * and a copy in this account's).
 */
export type SpaceChange =
  | { readonly kind: 'upload'; readonly bytes: number }
  | { readonly kind: 'trash'; readonly bytes: number }
  | { readonly kind: 'trash_copy'; readonly bytes: number };

export interface SpaceVerdict {
  /** Bytes the files would take after the operation. */
  used: number;
  /** Bytes the trash bin would hold after the operation. */
  trash: number;
  /** `quota - used` after the operation (may be negative). */
  free: number;
  /** How many more bytes of free space the operation needs to stay out of the zone with the headroom. */
  short: number;
}

/**
 * The share of the quota the agent's operations leave between the account and Nextcloud's
 * expiry zone: room for the owner's own next saves.
 */
export const HEADROOM_SHARE = 0.1;

/** The headroom in bytes for a quota: a tenth of it, rounded up. */
export const headroomOf = (quota: number): number => Math.ceil(quota * HEADROOM_SHARE);

/** The account with `change` applied as it would land. */
export function applied(space: SpaceFigures, change: SpaceChange): SpaceFigures {
  switch (change.kind) {
    case 'upload':
      return { ...space, used: space.used + change.bytes };
    case 'trash':
      return { ...space, used: space.used - change.bytes, trash: space.trash + change.bytes };
    case 'trash_copy':
      return { ...space, trash: space.trash + change.bytes };
  }
}

/**
 * The account with `change` applied at its worst: only what it adds counts, never what
 * it frees (a trash not yet reflected in a reading may still fail, and the item then
 * stays in the files while the trash bin is counted as holding it too).
 */
export function atWorst(space: SpaceFigures, change: SpaceChange): SpaceFigures {
  return change.kind === 'upload'
    ? applied(space, change)
    : { ...space, trash: space.trash + change.bytes };
}

/**
 * The account after `change`, and how far into Nextcloud's expiry zone (plus the headroom)
 * it would be; null when there is no quota (Nextcloud then expires only when the disk is
 * full).
 */
export function spaceAfter(space: SpaceFigures, change: SpaceChange): SpaceVerdict | null {
  if (space.quota === null) return null;
  // An upload that replaces a file is counted as if it added all its bytes: the old
  // content becomes a version, which Nextcloud limits by the same rule.
  const { used, trash } = applied(space, change);
  const free = space.quota - used;
  // Security: Nextcloud's available trash space is `free * 50% - trash` (or `free - trash`
  // when free is gone); at zero or below its expiry job deletes. Stopping just short of it
  // is not enough: an agent that fills the trash bin to the edge leaves the owner's next
  // save of their own to tip it, and the owner's oldest items go (seen on Nextcloud 34:
  // a 10 MB save by the owner purged an item the owner had trashed). So the agent's
  // operations must leave `free - 2 * trash` above a tenth of the quota: the owner can
  // then store that much before the zone. (This also keeps `free` above zero.)
  const short = Math.max(0, 2 * trash + headroomOf(space.quota) - free + 1);
  return { used, trash, free, short };
}

/** Bytes in decimal units, one decimal (as Nextcloud's own quota display rounds). */
export function bytesText(bytes: number): string {
  for (const [unit, size] of [
    ['GB', 1e9],
    ['MB', 1e6],
    ['kB', 1e3],
  ] as const)
    if (Math.abs(bytes) >= size) return `${(bytes / size).toFixed(1)} ${unit}`;
  return bytes === 1 ? `1 byte` : `${bytes} bytes`;
}
