/**
 * The devices paired with `broker pair`, at rest: `data_dir/matrix-pins.json`, mode 0600,
 * `{"v":1,"pins":[{"device_id","ed25519","paired_at"}]}`. Written whole to a new
 * temporary file and renamed over the old one, so a crash leaves the old list or the new
 * one, never half of either.
 *
 * Security: the file decides whose words approve access, so it is read and written only
 * as the broker's own regular file: never through a symbolic link (an attacker who can
 * plant one in data_dir must not choose the pins, nor have the broker write elsewhere),
 * never one of another user's, and narrowed to 0600 when it is wider.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { CodedError } from '../../base/coded-error.js';
import { currentUid, octalMode, PRIVATE_FILE_MODE } from '../../base/private-files.js';
import { iso } from '../../base/time.js';
import type { PinnedDevice } from '../../config.js';
import { parsePin } from '../../config.js';

export const PINS_FILE = 'matrix-pins.json';

export type PinFileErrorCode =
  | 'unsafe' // a link, not a regular file, or another user's
  | 'unreadable' // not the file this module writes
  | 'write_failed'; // could not be written

/** The pin file cannot be used; the message names the file and what to do. */
export class PinFileError extends CodedError<PinFileErrorCode> {
  override readonly name = 'PinFileError';
}

/** A device paired from the broker's host. */
export interface PairedPin extends PinnedDevice {
  /** When it was pinned (ms since the epoch). */
  readonly pairedAt: number;
}

const PinFileSchema = z
  .object({
    v: z.literal(1),
    pins: z.array(
      z
        .object({
          device_id: z.string(),
          ed25519: z.string(),
          paired_at: z.iso.datetime(),
        })
        .strict(),
    ),
  })
  .strict();

export function pinFilePath(dataDir: string): string {
  return join(dataDir, PINS_FILE);
}

/** What `open` answers for a path that is a symbolic link. */
const LINK_ERRORS = new Set(['ELOOP', 'EMLINK']);

function unsafe(path: string, what: string): PinFileError {
  return new PinFileError(
    'unsafe',
    `${path} ${what}; the broker reads its paired devices only from its own regular file: move it away and pair again (broker pair)`,
  );
}

/** The paired devices; none when the file does not exist. Throws PinFileError. */
export function readPinFile(dataDir: string, uid = currentUid()): PairedPin[] {
  const path = pinFilePath(dataDir);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (code === 'ENOENT') return [];
    if (LINK_ERRORS.has(code)) throw unsafe(path, 'is a symbolic link');
    throw new PinFileError('unreadable', `cannot read ${path} (${code})`, { cause: err });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unsafe(path, 'is not a regular file');
    if (uid !== undefined && st.uid !== uid) {
      throw unsafe(path, `belongs to uid ${st.uid}, not to the broker's user (uid ${uid})`);
    }
    // Security: only the broker's user may read which devices decide.
    if ((st.mode & 0o777 & ~PRIVATE_FILE_MODE) !== 0) fchmodSync(fd, st.mode & PRIVATE_FILE_MODE);
    return parsePins(readFileSync(fd, 'utf8'), path);
  } finally {
    closeSync(fd);
  }
}

function parsePins(text: string, path: string): PairedPin[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const parsed = PinFileSchema.safeParse(value);
  const pins = parsed.success
    ? parsed.data.pins.map((p) => ({ pin: parsePin(`${p.device_id} ${p.ed25519}`), at: p }))
    : [];
  if (!parsed.success || pins.some((p) => p.pin === undefined)) {
    // Security: never guess at which devices decide; the owner pairs again.
    throw new PinFileError(
      'unreadable',
      `${path} is not a list of paired devices this broker wrote: move it away and pair again (broker pair)`,
    );
  }
  return pins.map(({ pin, at }) => ({
    ...(pin as PinnedDevice),
    pairedAt: Date.parse(at.paired_at),
  }));
}

/** Replaces the file with `pins`. Throws PinFileError. */
export function writePinFile(dataDir: string, pins: readonly PairedPin[]): void {
  const path = pinFilePath(dataDir);
  const tmp = `${path}.tmp`;
  const body = `${JSON.stringify({
    v: 1,
    pins: pins.map((p) => ({
      device_id: p.deviceId,
      ed25519: p.ed25519,
      paired_at: iso(p.pairedAt),
    })),
  })}\n`;
  try {
    // A temporary file left by a crash (or planted: unlink removes a link, not its target).
    try {
      unlinkSync(tmp);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    // Security: O_EXCL with O_NOFOLLOW creates a new file or fails; it never writes
    // through a link someone put there since.
    const fd = openSync(
      tmp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      PRIVATE_FILE_MODE,
    );
    try {
      fchmodSync(fd, PRIVATE_FILE_MODE);
      writeSync(fd, body);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // rename replaces whatever is at `path`, a link included, and never follows it.
    renameSync(tmp, path);
  } catch (err) {
    throw new PinFileError(
      'write_failed',
      `cannot write ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the data folder (mode ${octalMode(PRIVATE_FILE_MODE)} files of the broker's user)`,
      { cause: err },
    );
  }
}
