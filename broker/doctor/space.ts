/**
 * Whether Nextcloud's space-driven expiry can delete the trash bin and old versions of
 * the broker's account (docs/nextcloud-behaviour.md#space-driven-expiry). The retention
 * settings are in the server's config.php, which no API shows, so the doctor reports
 * the quota that makes the expiry possible and what to set.
 */
import type { InstanceConfig } from '../config.js';
import type { AnswerSink } from '../nextcloud/answers.js';
import { NextcloudConnection } from '../nextcloud/connection.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { readSpace } from '../nextcloud/space.js';
import { bytesText } from '../operations/space-guard.js';
import { type Check, pass, warn } from './checklist.js';

export const RETENTION_FIX =
  "in the server's config.php set 'trashbin_retention_obligation' => '30, 30' (each trashed item is kept 30 days, then deleted whatever the space; any 'D, D' with two numbers) and 'versions_retention_obligation' => 'disabled' (versions are then never deleted by Nextcloud): with 'auto', the default, Nextcloud deletes them to make room (the broker cannot read these settings, so this shows while a quota is set)";

export async function checkSpace(
  inst: InstanceConfig,
  timeoutMs: number,
  onAnswer?: AnswerSink,
): Promise<Check> {
  const conn = new NextcloudConnection(inst, { timeoutMs, ...(onAnswer ? { onAnswer } : {}) });
  try {
    const space = await conn.guard(() => readSpace({ conn }));
    if (space.quota === null)
      return pass(
        `no quota on ${inst.username}: Nextcloud deletes trash bin items and versions for space only when its disk is full`,
      );
    // Security: with a quota, Nextcloud's default retention lets its background job delete
    // the owner's trash bin and versions; the broker refuses what an agent would add, but
    // the owner is told, since their own clients can still get there.
    return warn(
      `${inst.username} has a quota of ${bytesText(space.quota)} (${bytesText(space.quota - space.used)} free, ${bytesText(space.trash)} in the trash bin): unless retention is set, Nextcloud deletes trash bin items and old versions once they take half the free space; the broker refuses agent uploads and trashes that would get there (insufficient_space), not the owner's own`,
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
