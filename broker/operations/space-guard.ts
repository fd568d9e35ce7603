/**
 * Nothing is ever permanently deleted, not even by Nextcloud on the agent's behalf.
 * Nextcloud expires the trash bin (files_trashbin `Trashbin::expire`) and old versions
 * (files_versions `Storage::expire`) when, with a quota, either takes more than half of
 * the space the quota leaves free (`quota - used`), or any at all once that space is
 * gone; the background job then deletes the oldest items first: the owner's own, outside
 * any grant. So before each upload (push, checkin) and each trash, the broker reads the
 * account's space (nextcloud/space.ts) and refuses, with `insufficient_space`, an
 * operation that would leave the trash bin at or above half the free space, or within a
 * tenth of the quota of it (docs/nextcloud-behaviour.md#space-driven-expiry says what this
 * covers and what not).
 */
import { refused } from '../base/envelope.js';
import { OperationRefusal, type Allowed } from './pipeline.js';
import type { Space } from '../nextcloud/client.js';
import type { NextcloudPort } from './ports.js';

/** What the operation would change: an upload adds `bytes` of files; a trash moves them. */
export type SpaceChange = { kind: 'upload'; bytes: number } | { kind: 'trash'; bytes: number };

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

/**
 * The account after `change`, and how far into Nextcloud's expiry zone (plus the headroom)
 * it would be; null when there is no quota (Nextcloud then expires only when the disk is
 * full).
 */
export function spaceAfter(space: Space, change: SpaceChange): SpaceVerdict | null {
  if (space.quota === null) return null;
  // An upload that replaces a file is counted as if it added all its bytes: the old
  // content becomes a version, which Nextcloud limits by the same rule.
  const used = change.kind === 'upload' ? space.used + change.bytes : space.used - change.bytes;
  const trash = change.kind === 'trash' ? space.trash + change.bytes : space.trash;
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

/**
 * Security: refuses an upload or trash that would let Nextcloud's space-driven expiry
 * delete trash bin items or versions (the owner's included); nothing was sent.
 */
export async function guardSpace(
  client: NextcloudPort,
  allowed: Allowed,
  change: SpaceChange | { kind: 'trash'; path: string },
): Promise<void> {
  const space = await client.space('path' in change ? change.path : undefined, allowed.signal);
  const resolved: SpaceChange =
    'path' in change ? { kind: 'trash', bytes: space.item ?? 0 } : change;
  const after = spaceAfter(space, resolved);
  if (after === null || after.short === 0 || space.quota === null) return;
  const what = resolved.kind === 'upload' ? 'this upload' : 'trashing this';
  throw new OperationRefusal(
    refused(
      'insufficient_space',
      `not enough space: ${what} (${bytesText(resolved.bytes)}) would leave ${bytesText(Math.max(0, after.free))} free of the ${bytesText(space.quota)} quota with ${bytesText(after.trash)} in the trash bin, too close to where Nextcloud deletes trash bin items and old versions to make room (the broker keeps a tenth of the quota, ${bytesText(headroomOf(space.quota))}, for the owner's own saves); ${bytesText(after.short)} more free space is needed; nothing was done`,
      {
        hint: 'ask the owner to free space or raise the quota (emptying the trash bin is their call); retrying as is will be refused again',
        space: {
          quota: space.quota,
          used: space.used,
          trash: space.trash,
          bytes: resolved.bytes,
          needed: after.short,
        },
      },
    ),
  );
}
