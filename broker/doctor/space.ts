/**
 * Whether Nextcloud's space-driven expiry can delete the trash bin and old versions of
 * the broker's account, or of whoever shared a folder with it
 * (docs/nextcloud-behaviour.md#space-driven-expiry). The retention settings are in the
 * server's config.php, which no API shows, so the doctor reports the quota that makes
 * the expiry possible, what to set, and what the instance's config declares of them
 * (`instances.<name>.retention`, config/retention.ts).
 */
import type { InstanceConfig } from '../config.js';
import { keepsFromSpaceExpiry, trashKeepsYoung, versionsKept } from '../config/retention.js';
import type { AnswerSink } from '../nextcloud/answers.js';
import { NextcloudConnection } from '../nextcloud/connection.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { readOwnSpace } from '../nextcloud/space.js';
import { bytesText } from '../operations/space-rule.js';
import { type Check, pass, warn } from './checklist.js';

export const RETENTION_FIX =
  "in the server's config.php set 'trashbin_retention_obligation' => '30, 30' (each trashed item is kept 30 days, then deleted whatever the space; any 'D, D' with two numbers) and 'versions_retention_obligation' => 'disabled' (versions are then never deleted by Nextcloud, neither for space nor by age; under any other value, 'D, D' too, Nextcloud deletes the oldest versions whenever they take more than half the free space, and the broker cannot see their size): with 'auto', the default, Nextcloud deletes them to make room (the broker cannot read these settings, so this shows while a quota is set)";

/** How to declare the server's settings in the broker's config, once they are set. */
const DECLARE_FIX = (name: string): string =>
  `once config.php says so, declare it under instances.${name}: retention: { trashbin_retention_obligation: "30, 30", versions_retention_obligation: disabled } (the values as config.php has them)`;

/** What the instance's config declares of the server's retention, in one check. */
export function checkRetentionDeclaration(inst: InstanceConfig): Check {
  const declared = inst.retention;
  // Not a warning: it only refuses, and only writes into quota-limited sharers' folders.
  if (declared === undefined)
    return pass(
      `instances.${inst.name}.retention is not set: the broker assumes Nextcloud's default retention ('auto'), so it refuses every write into a folder another user shared with ${inst.username} while that user has a quota (it cannot see their trash bin or versions, which Nextcloud deletes to make room); to let such writes through, ${RETENTION_FIX.replace(/ \(the broker cannot read.*$/, '')}, then ${DECLARE_FIX(inst.name)}`,
    );
  const trash = declared.trashbin_retention_obligation;
  const versions = declared.versions_retention_obligation;
  if (keepsFromSpaceExpiry(declared))
    return pass(
      `instances.${inst.name}.retention declares trashbin_retention_obligation '${trash}' and versions_retention_obligation '${versions}': Nextcloud keeps trash bin items younger than the first number of days and every version from space-driven expiry, so the broker writes into folders other users shared even when they have a quota (within the free space Nextcloud shows); the broker cannot read config.php: keep the two in step`,
    );
  const open = [
    ...(trashKeepsYoung(trash)
      ? []
      : [`trashbin_retention_obligation '${trash}' lets it delete any trash bin item for space`]),
    ...(versionsKept(versions)
      ? []
      : [`versions_retention_obligation '${versions}' lets it delete old versions for space`]),
  ];
  return warn(
    `instances.${inst.name}.retention declares settings under which Nextcloud can still purge for space (${open.join('; ')}), so the broker refuses writes into folders other users shared while they have a quota`,
    RETENTION_FIX,
  );
}

export async function checkSpace(
  inst: InstanceConfig,
  timeoutMs: number,
  onAnswer?: AnswerSink,
): Promise<Check> {
  const conn = new NextcloudConnection(inst, { timeoutMs, ...(onAnswer ? { onAnswer } : {}) });
  try {
    const space = await conn.guard(() => readOwnSpace({ conn }));
    if (space.quota === null)
      return pass(
        `no quota on ${inst.username}: Nextcloud deletes trash bin items and versions for space only when its disk is full`,
      );
    // Security: with a quota, Nextcloud's default retention lets its background job delete
    // the owner's trash bin and versions; the broker refuses what an agent would add, but
    // the owner is told, since their own clients can still get there, and the versions'
    // size is invisible to the broker.
    return warn(
      `${inst.username} has a quota of ${bytesText(space.quota)} (${bytesText(space.quota - space.used)} free, ${bytesText(space.trash)} in the trash bin): unless retention is set, Nextcloud deletes trash bin items and old versions once they take half the free space; the broker refuses agent uploads and trashes that would get there (insufficient_space), not the owner's own, and it cannot see the versions' size, so only versions_retention_obligation 'disabled' keeps them`,
      RETENTION_FIX,
    );
  } catch (error) {
    const detail = error instanceof NextcloudError ? error.code : 'unknown error';
    return warn(
      `the account's quota and trash bin size could not be read (${detail}): uploads and trashes will be refused until they can`,
      "check the server's logs and run doctor again",
    );
  } finally {
    conn.close();
  }
}
