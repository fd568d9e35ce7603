/**
 * Local checks: the data directory can be written, it and the broker's files in it are
 * private, and an existing audit log verifies. All are read-only or leave nothing
 * behind, so they are safe beside a running broker.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CHECKPOINT_FILE, LOG_FILE, verifyAudit } from '../audit/index.js';
import {
  chmodLine,
  currentUid,
  octalMode,
  PrivateModeError,
  refuseSymlinks,
} from '../base/private-files.js';
import { wideDataModes } from '../data-folder.js';
import { type Check, fail, pass, warn } from './checklist.js';

function errno(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown error';
}

/** The nearest folder at or above `dir` that exists. */
function nearestExisting(dir: string): string {
  let current = dir;
  while (!existsSync(current)) {
    const parent = dirname(current);
    if (parent === current) return current;
    current = parent;
  }
  return current;
}

export function checkDataDir(dir: string): Check {
  const fixOwner = `make ${dir} writable by the user that runs the broker (chown/chmod), or set data_dir to a folder it owns`;
  let stat;
  try {
    stat = statSync(dir);
  } catch (error) {
    if (errno(error) !== 'ENOENT')
      return fail(`data_dir ${dir} cannot be read`, fixOwner, errno(error));
    const parent = nearestExisting(dirname(dir));
    try {
      accessSync(parent, constants.W_OK);
    } catch (e) {
      return fail(
        `data_dir ${dir} does not exist and cannot be created`,
        `create it, or ${fixOwner}`,
        `${parent}: ${errno(e)}`,
      );
    }
    return pass(`data_dir ${dir} does not exist yet; the broker will create it`);
  }
  if (!stat.isDirectory())
    return fail(
      `data_dir ${dir} is not a folder`,
      "set data_dir to a folder (relative paths start at the config file's folder)",
    );
  // A real write (then removed): access(W_OK) misses read-only mounts and full disks.
  const probe = join(dir, `.doctor-${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(probe, 'probe\n', { flag: 'wx', mode: 0o600 });
  } catch (error) {
    return fail(`data_dir ${dir} is not writable`, fixOwner, errno(error));
  } finally {
    rmSync(probe, { force: true });
  }
  return pass(`data_dir ${dir} is writable`);
}

export function checkAuditLog(dir: string): Check {
  if (!existsSync(join(dir, LOG_FILE)) && !existsSync(join(dir, CHECKPOINT_FILE)))
    return pass('no audit log yet (the broker starts one on its first start)');
  let result;
  try {
    result = verifyAudit(dir);
  } catch (error) {
    return fail(
      `the audit log in ${dir} cannot be read`,
      'make it readable by this user and run doctor again',
      errno(error),
    );
  }
  if (result.ok)
    return pass(`audit log intact: ${result.records} records, head seq ${result.head.seq}`);
  return fail(
    `audit log broken at seq ${result.seq}`,
    'treat records from this seq on as untrustworthy; keep audit.log and audit.checkpoint as evidence, compare with a backup, and see `broker audit verify --help`',
    result.reason,
  );
}

/**
 * Every data folder or file others can read, with the `chmod` that fixes it. A warning
 * when this user owns them all (the broker narrows them itself when it starts), a
 * failure when one belongs to another user (the broker refuses to start on it).
 */
export function checkDataModes(dir: string, uid = currentUid()): Check {
  let wide;
  try {
    // A link in the data folder makes the broker refuse to start: say so first.
    refuseSymlinks(dir);
    wide = wideDataModes(dir, uid);
  } catch (error) {
    if (error instanceof PrivateModeError && error.code === 'symlink')
      return fail(
        error.message.replace(/: remove the link.*$/, ''),
        error.message.replace(/^.*: (remove the link)/, '$1'),
      );
    return fail(
      `the modes in data_dir ${dir} cannot be read`,
      "run doctor as the broker's user",
      errno(error),
    );
  }
  if (wide.length === 0) {
    return pass(`data_dir ${dir} and the broker's files in it are private (0700, 0600)`);
  }
  const found = wide.map((w) => `${w.path} ${octalMode(w.mode)}`).join(', ');
  const fix = chmodLine(wide);
  const foreign = wide.filter((w) => !w.mine);
  if (foreign.length === 0) {
    return warn(
      `other users can read: ${found}`,
      `the broker narrows these when it starts; to do it now: ${fix}`,
    );
  }
  return fail(
    `other users can read: ${found}`,
    `as their owner run: ${fix} (the broker refuses to start on them), or set data_dir to a folder the broker's user owns`,
    foreign.map((w) => `${w.path} belongs to uid ${w.uid}`).join(', '),
  );
}
