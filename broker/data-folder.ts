/**
 * The data folder (`data_dir`) and the broker's files in it: created 0700 and 0600, and
 * narrowed to that on every start (issue 14.9). `broker doctor` names what is wider.
 *
 * An existing folder or file that is wider is narrowed when the broker's user owns it,
 * with a warning in the log: a clone's `./data` is 0755 (git keeps no folder modes), as
 * is a Docker volume made by `mkdir`, and narrowing what is ours takes nothing from
 * anyone who should have it. One that belongs to another user is refused with the
 * `chmod` to run: it is not ours to change, and the broker must not keep its state there.
 * A symlink, as the folder or in it, is refused, naming it: it would be followed.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { OWNER_SOCKET_FILE } from './approval/owner/protocol.js';
import { CHECKPOINT_FILE, LOCK_FILE, LOG_FILE } from './audit/index.js';
import type { Logger } from './base/log.js';
import {
  currentUid,
  narrowMode,
  octalMode,
  PRIVATE_DIR_MODE,
  refuseSymlinks,
  PRIVATE_FILE_MODE,
  wideMode,
  type WideMode,
} from './base/private-files.js';
import { databaseFiles } from './grants/database.js';
import { RECONCILE_FILE } from './operations/reconcile/cursor.js';

/** The grant database's file name in data_dir. */
export const GRANTS_FILE = 'grants.db';

/** Every file the broker keeps in data_dir. */
export const DATA_FILES: readonly string[] = [
  ...databaseFiles(GRANTS_FILE),
  LOG_FILE,
  CHECKPOINT_FILE,
  LOCK_FILE,
  OWNER_SOCKET_FILE,
  RECONCILE_FILE,
];

/** `dir` and the broker's files in it that grant more than 0700 / 0600. */
export function wideDataModes(dir: string, uid = currentUid()): WideMode[] {
  const wide = [wideMode(dir, PRIVATE_DIR_MODE, uid)];
  for (const name of DATA_FILES) wide.push(wideMode(join(dir, name), PRIVATE_FILE_MODE, uid));
  return wide.filter((w) => w !== undefined);
}

/**
 * Creates `dir` (0700) if needed and narrows it and the broker's files in it. Throws
 * PrivateModeError for a wider one this user does not own.
 */
export function prepareDataFolder(dir: string, logger: Logger, uid = currentUid()): void {
  // Security: nothing in the data folder is ever followed through a link (private-files.ts).
  refuseSymlinks(dir);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const narrowed = [narrowMode(dir, PRIVATE_DIR_MODE, uid)];
  for (const name of DATA_FILES) {
    narrowed.push(narrowMode(join(dir, name), PRIVATE_FILE_MODE, uid));
  }
  for (const w of narrowed) {
    if (w === undefined) continue;
    logger.warn('data file was readable by other users; narrowed it', {
      path: w.path,
      was: octalMode(w.mode),
      now: octalMode(w.mode & w.allowed),
    });
  }
}
